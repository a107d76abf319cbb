#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, runs every C/C++ test with CTest, then the Python
# package's tests (pytest) against the build tree, then the ThreadSanitizer run (tools/run-tsan.sh). Arguments go
# to CTest.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/tools/setup.sh"
"$root/tools/build.sh"
build=${PRIMKIT_BUILD_DIR:-$root/build}
status=0
(cd "$build" && ctest --output-on-failure -j"${PRIMKIT_JOBS:-$(nproc)}" --timeout 900 "$@") || status=$?
if [ -d "$build/python/primkit" ]; then
  PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}" "${PRIMKIT_PYTHON:-python3}" -m pytest -q -p no:cacheprovider \
    "$root/tests/python" || status=$?
else
  echo "run-tests: the Python package was not built (PRIMKIT_BUILD_PYTHON=OFF); pytest skipped" >&2
fi
# The thread-safety contract under ThreadSanitizer, in a build of its own (build-tsan/). PRIMKIT_SKIP_TSAN=1 skips it.
if [ "${PRIMKIT_SKIP_TSAN:-0}" != 1 ]; then
  "$root/tools/run-tsan.sh" || status=$?
else
  echo "run-tests: PRIMKIT_SKIP_TSAN=1: the ThreadSanitizer run (tools/run-tsan.sh) skipped" >&2
fi
# The ASan + UBSan build with its tests and a short run of every fuzzer (build-asan/); PRIMKIT_SKIP_ASAN=1 skips it.
if [ "${PRIMKIT_SKIP_ASAN:-0}" != 1 ]; then
  "$root/tools/run-asan.sh" || status=$?
else
  echo "run-tests: PRIMKIT_SKIP_ASAN=1: the sanitizer run (tools/run-asan.sh) skipped" >&2
fi
exit $status
