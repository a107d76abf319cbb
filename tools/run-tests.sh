#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, runs every test with CTest.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/tools/setup.sh"
"$root/tools/build.sh"
build=${PRIMKIT_BUILD_DIR:-$root/build}
cd "$build"
ctest --output-on-failure -j"${PRIMKIT_JOBS:-$(nproc)}" --timeout 900 "$@"
