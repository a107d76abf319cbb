#!/usr/bin/env bash
# Installs the build to a fresh prefix, builds tests/package/consumer against it with find_package(PrimKit),
# and runs the consumer: the package, its targets and its plugin folder must work outside the source tree.
set -euo pipefail
build=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
test -f "$work/prefix/lib/cmake/PrimKit/PrimKitConfig.cmake"
test -f "$work/prefix/lib/cmake/PrimKit/PrimKitConfigVersion.cmake"
test -f "$work/prefix/include/primkit/primkit.h"
# Discovery's probe sits in the plugin folder, where the installed runtime looks for it.
test -x "$work/prefix/lib/primkit/primkit-plugin-probe"
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
cmake -S "$src/tests/package/consumer" -B "$work/consumer" "${generator[@]}" -DCMAKE_PREFIX_PATH="$work/prefix" > "$work/configure.log"
cmake --build "$work/consumer" > "$work/build.log"
# Run with no PRIMKIT_PLUGIN_PATH: the installed CPU backend must be found next to the installed runtime.
# Its probe verdicts go to a cache folder of its own, not the user's.
env -u PRIMKIT_PLUGIN_PATH PRIMKIT_CACHE_DIR="$work/cache" LD_LIBRARY_PATH="$work/prefix/lib" "$work/consumer/consumer_app" "$work/consumer/libprimkit_backend_hello.so" | tee "$work/out.txt"
grep -q "loaded hello by Consumer Inc. with 0 devices" "$work/out.txt"
grep -q "add: PK_OK 3 30" "$work/out.txt"
grep -q "libprimkit_backend_cpu.so" "$work/cache/plugin-probes-v1.tsv"
echo "package consumer: ok"
