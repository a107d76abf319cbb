#!/usr/bin/env bash
# The sanitizer run (CI calls it from tools/run-tests.sh; PRIMKIT_SKIP_ASAN=1 skips it there):
#   1. configures build-asan with clang-19: ASan + UBSan on every target (cmake/Sanitizers.cmake, UBSan never
#      recovers), -O1 -g, libFuzzer instrumentation (-fsanitize=fuzzer-no-link) so the fuzzers link against the
#      same build; no Python package, no benchmarks;
#   2. builds only the runtime, the op table, the cpu, cuda-emu and opencl backends, conformance, their tests and
#      the fuzzers;
#   3. runs those tests under the sanitizers (CTest, by the test names below), the conformance quick profile of
#      cpu, cuda-emu and opencl on a subset of ops (conformance.asan.*, tests/conformance/CMakeLists.txt), and
#      replays every fuzz corpus;
#   4. fuzzes each harness for about PRIMKIT_FUZZ_SECONDS (default 15; a fixed number of executions, fixed seed) on
#      its committed corpus (new inputs go to a scratch folder, never into the tree); prints executions per target.
# Any sanitizer report fails the test that triggered it; a fuzzer finding fails the script and leaves its
# reproducer in build-asan/fuzz-artifacts/. Arguments go to CTest.
#
# OpenCL runs here too: PoCL (its LLVM 15 compiling kernels inside the instrumented process, its worker threads
# reading host memory) works under ASan, and the opencl conformance subset found a use-after-free that way. Its
# own gtest binary (tests/opencl) is left to the plain build: 1,600 lines more to compile instrumented.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${PRIMKIT_ASAN_BUILD_DIR:-$root/build-asan}
jobs=${PRIMKIT_JOBS:-$(nproc)}
fuzz_seconds=${PRIMKIT_FUZZ_SECONDS:-15}

if ! command -v clang-19 >/dev/null 2>&1 || ! [ -e /usr/lib/llvm-19/lib/clang/19/lib/linux/libclang_rt.fuzzer-x86_64.a ]; then
  "$root/tools/setup.sh"
fi
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
t0=$(date +%s)
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" "${generator[@]}" \
        -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
        -DPRIMKIT_SANITIZE=address,undefined -DPRIMKIT_BUILD_FUZZERS=ON \
        -DPRIMKIT_BUILD_PYTHON=OFF -DPRIMKIT_BUILD_BENCH=OFF \
        -DPython3_EXECUTABLE="$(command -v "${PRIMKIT_PYTHON:-python3}")" ${PRIMKIT_ASAN_CMAKE_ARGS:-} >/dev/null
fi
targets=(primkit_runtime_tests primkit_primops_tests primkit_cpu_tests primkit_codegen_tests primkit_conformance_tests
         primkit_oracle_tests primkit primkit_backend_cuda-emu primkit_backend_opencl primkit_fuzzers)
cmake --build "$build" -j"$jobs" --target "${targets[@]}"
t1=$(date +%s)
echo "run-asan: build took $((t1 - t0)) s"

# Sanitizer settings for every process the tests start (child processes of the conformance runner and the plugin
# probe included). Leak checking is on (LSan); a report aborts the process with a non-zero exit.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# The fuzzers may ask for more memory than the machine has (a graph whose decomposition needs a 40 GB temporary):
# such an allocation must fail with PK_ERROR_OUT_OF_MEMORY, as it does without ASan, not abort the run. So for them
# ASan's allocator returns NULL and libFuzzer's own per-allocation limit is off; the RSS limit still stands.
fuzz_asan_options="$ASAN_OPTIONS:allocator_may_return_null=1"


# The tests of those components. Not here: the oracle's numpy comparison (Python driving a dump tool, slow) and the
# ABI/package/template flows (they build other projects; no sanitized code of ours they would add), the planted-bug
# self-test (crashing on purpose is its job), the opencl gtests (see above), ProbeDiscovery's test of runtimes
# created on several threads at once (with opencl in this build's plugin folder, PoCL's concurrent first
# initialisation crashes inside libpocl, strlen(NULL) under clGetDeviceInfo, on some runs), and the PTX checks
# (codegen.CodegenPtx: NVPTX output assembled by ptxas, the cuda backend's and not cuda-emu's; over 10 minutes
# instrumented).
include='^(cpu\.|primops\.|codegen\.|oracle\.|fuzz\.replay\.|conformance\.asan\.|runtime\.|[A-Z][A-Za-z]*(Test|Tests)?\.)'
exclude='NOT_BUILT|RuntimesCreatedOnSeveralThreadsAtOnce|planted|Planted|selftest|oracle\.numpy|template_flow|package_consumer|abi_layout|cpu\.isa_|gen_ops_fuzz|CodegenPtx'
status=0
(cd "$build" && ctest --output-on-failure -j"$jobs" --timeout 900 -R "$include" -E "$exclude" "$@") || status=$?
t2=$(date +%s)
echo "run-asan: tests took $((t2 - t1)) s"

# Fuzz each harness for a fixed budget on a scratch copy of its corpus.
scratch=$build/fuzz-scratch
artifacts=$build/fuzz-artifacts
mkdir -p "$artifacts"
summary=()
# A fixed budget in executions with a fixed seed, so that CI sees the same inputs on every run (a finding is then
# reproducible, never a flake): about PRIMKIT_FUZZ_SECONDS (15) on these 2 cores at each harness's measured speed,
# capped at four times that. tools/fuzz-long.sh explores with random seeds for hours.
declare -A per_second=([launch]=1000 [query]=25 [graph]=280 [attrs]=5000 [plugin]=3500 [op_table]=270)
for t in launch query graph attrs plugin op_table; do
  rm -rf "$scratch/$t" && mkdir -p "$scratch/$t"
  log=$build/fuzz-$t.log
  if ASAN_OPTIONS=$fuzz_asan_options "$build/bin/fuzz_$t" -seed=1 -runs=$((per_second[$t] * fuzz_seconds)) \
       -max_total_time=$((4 * fuzz_seconds)) -timeout=60 -rss_limit_mb=4096 -malloc_limit_mb=1000000000 -print_final_stats=1 \
       -artifact_prefix="$artifacts/$t-" "$scratch/$t" "$root/fuzz/corpus/$t" >"$log" 2>&1; then
    result=ok
  else
    result=FAILED
    status=1
    tail -n 60 "$log"
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  summary+=("fuzz_$t: ${execs:-?} executions, $result")
done
t3=$(date +%s)
printf 'run-asan: %s\n' "${summary[@]}"
echo "run-asan: fuzzing took $((t3 - t2)) s; total $((t3 - t0)) s"
exit $status
