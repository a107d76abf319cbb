#!/usr/bin/env bash
# ThreadSanitizer: builds what the thread stress test needs into build-tsan/ (override with PRIMKIT_TSAN_BUILD_DIR)
# with clang-19 and -fsanitize=thread on every target, then runs the thread stress test and the runtime tests under
# it. Any report fails the run (halt_on_error): there is no suppression file, and none was needed.
#
# Left out of this build, so that no uninstrumented library's threads or atomics can hide a race or invent one:
# oneDNN (its OpenMP pool is not instrumented; the CPU backend then uses its own loops), the LLVM code generator
# (libLLVM is not instrumented; the CPU backend then fuses nothing, and the graph fusion path is covered by the
# simulated test backend), OpenCL (PoCL's threads), the Python package and the benchmarks.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${PRIMKIT_TSAN_BUILD_DIR:-$root/build-tsan}
jobs=${PRIMKIT_JOBS:-$(nproc)}
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_C_COMPILER="${PRIMKIT_TSAN_CC:-clang-19}" -DCMAKE_CXX_COMPILER="${PRIMKIT_TSAN_CXX:-clang++-19}" \
        -DPRIMKIT_SANITIZE=thread -DPRIMKIT_WITH_ONEDNN=OFF -DPRIMKIT_WITH_LLVM=OFF -DPRIMKIT_WITH_OPENCL=OFF \
        -DPRIMKIT_BUILD_PYTHON=OFF -DPRIMKIT_BUILD_BENCH=OFF ${PRIMKIT_CMAKE_ARGS:-} >/dev/null
fi
cmake --build "$build" -j"$jobs" --target primkit_thread_stress_tests primkit_runtime_tests

# halt_on_error: the first report ends the process with a failure. second_deadlock_stack: a lock-order report
# shows both acquisitions.
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 ${TSAN_OPTIONS:-}"
tests="$build/tests/runtime"
# Three times the default iterations (about 6 s here): more interleavings for the race detector to see.
echo "run-tsan: the thread stress test"
PRIMKIT_STRESS_SCALE=${PRIMKIT_STRESS_SCALE:-3} "$build/bin/primkit_thread_stress_tests"
# All the runtime tests (about 12 s under TSan), among them the ones that start threads of their own: backend
# list growth during fallback launches, runtimes created and probing plugins on several threads at once.
echo "run-tsan: the runtime tests"
PRIMKIT_CACHE_DIR="$tests/probe_cache" "$build/bin/primkit_runtime_tests"
echo "run-tsan: ok (no ThreadSanitizer report)"
