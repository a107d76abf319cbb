#!/usr/bin/env bash
# Configures and builds PrimKit into build/ (override with PRIMKIT_BUILD_DIR). Used by the two Quick start
# commands; safe to run repeatedly (incremental).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${PRIMKIT_BUILD_DIR:-$root/build}
jobs=${PRIMKIT_JOBS:-$(nproc)}
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DPython3_EXECUTABLE="$(command -v "${PRIMKIT_PYTHON:-python3}")" ${PRIMKIT_CMAKE_ARGS:-}
fi
cmake --build "$build" -j"$jobs"
