#!/usr/bin/env bash
# gpu-bundle.sh — packs what tools/gpu-check.sh runs into one relocatable archive, for a GPU host that has the
# NVIDIA driver but not the build toolchain (LLVM 19, oneDNN, ...). Run on the build host:
#   tools/gpu-bundle.sh [BUILD_DIR] [OUT.tar.xz]        (defaults: build, BUILD_DIR/primkit-gpu-bundle.tar.xz)
# then on the GPU host:
#   mkdir pk && tar -xJf primkit-gpu-bundle.tar.xz -C pk && tools/gpu-check.sh --prebuilt pk
# The archive holds bin/ (the CLI, the code generator tests, the cuda benchmark), lib/ (runtime, conformance,
# lib/primkit/ the cuda plugin) and deps/: every shared library they load beyond glibc, libstdc++ and libgcc,
# which a newer distribution provides compatibly. Binaries are stripped; the bundle needs glibc >= the build
# host's. The CUDA driver (libcuda.so.1) is never bundled: it comes from the GPU host.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out=${2:-$build/primkit-gpu-bundle.tar.xz}
jobs=${PRIMKIT_JOBS:-$(nproc)}

targets=(primkit primkit_codegen_tests primkit_backend_cuda primkit_bench_cuda)
cmake --build "$build" -j"$jobs" --target "${targets[@]}"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib/primkit" "$stage/deps"
cp "$build/bin/primkit" "$build/bin/primkit_codegen_tests" "$build/bin/primkit_bench_cuda" "$stage/bin/"
cp -L "$build/lib/libprimkit.so.1" "$build/lib/libprimkit_conformance.so.1" "$stage/lib/"
cp "$build/lib/primkit/libprimkit_backend_cuda.so" "$stage/lib/primkit/"

# Shared libraries beyond the C/C++ runtime, resolved on this host, copied once each.
declare -A seen=()
for f in "$stage"/bin/* "$stage"/lib/*.so.* "$stage"/lib/primkit/*.so; do
  while read -r name path; do
    case "$name" in
      linux-vdso* | ld-linux* | libc.so* | libm.so* | libdl.so* | libpthread.so* | librt.so* | libstdc++.so* | \
        libgcc_s.so* | libprimkit*) continue ;;
    esac
    [ -n "$path" ] && [ -z "${seen[$name]:-}" ] || continue
    seen[$name]=1
    cp -L "$path" "$stage/deps/$name"
  done < <(ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}')
done
strip --strip-unneeded "$stage"/bin/* "$stage"/lib/*.so.* "$stage"/lib/primkit/*.so "$stage"/deps/* 2>/dev/null || true
git -C "$root" rev-parse --short HEAD >"$stage/COMMIT" 2>/dev/null || echo unknown >"$stage/COMMIT"
tar -C "$stage" -cf - . | xz -T"$jobs" -6 >"$out"
echo "gpu-bundle: $out ($(du -h "$out" | cut -f1); $(ls "$stage/deps" | wc -l) libraries in deps/)"
