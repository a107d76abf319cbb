#!/usr/bin/env bash
# gpu-check.sh — the checks of the cuda backend that need an NVIDIA GPU, in one run (budget: under 8 minutes).
# Builds only what they need into build-gpu/ (override with PRIMKIT_BUILD_DIR), then:
#   1. the code generator tests (PTX through ptxas, cuda-emu against references, cuda plugin load),
#   2. the cuda backend on the GPU: device listing, and every generated kernel against the same references
#      (the emulator test suite re-run with PRIMKIT_CODEGEN_TEST_BACKEND=cuda),
#   3. `primkit conformance --backend cuda --profile quick` when the CLI has that subcommand,
#   4. the fusion benchmark (CPU JIT) for the record.
# Exit status: non-zero if any step failed. Logs go to $build/gpu-check/.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${PRIMKIT_BUILD_DIR:-$root/build-gpu}
jobs=${PRIMKIT_JOBS:-$(nproc)}
logs=$build/gpu-check
mkdir -p "$logs"
start=$(date +%s)
status=0
step() { echo "== [$(( $(date +%s) - start ))s] $*"; }
run() {  # run NAME TIMEOUT_S CMD...: logs to $logs/NAME.log, records failure, keeps going
  local name=$1 limit=$2
  shift 2
  step "$name"
  if timeout "$limit" "$@" >"$logs/$name.log" 2>&1; then
    tail -n 15 "$logs/$name.log"
  else
    echo "!! $name failed (exit $?); last lines of $logs/$name.log:"
    tail -n 40 "$logs/$name.log"
    status=1
  fi
}

if ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "gpu-check: nvidia-smi not found; the GPU steps will report 0 devices (continuing)"
else
  nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv,noheader || true
fi
command -v ptxas >/dev/null 2>&1 || echo "gpu-check: ptxas not on PATH: the PTX assembly test will be skipped"

step "configure + build ($build)"
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
if ! cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPRIMKIT_WITH_LLVM=ON \
      -DPRIMKIT_WITH_OPENCL=OFF -DPython3_EXECUTABLE="$(command -v "${PRIMKIT_PYTHON:-python3}")" >"$logs/configure.log" 2>&1; then
  tail -n 30 "$logs/configure.log"
  exit 1
fi
targets=(primkit_codegen_tests primkit_backend_cuda primkit_backend_cuda-emu primkit_backend_cpu primkit)
grep -q primkit_bench_fusion "$build/build.ninja" 2>/dev/null && targets+=(primkit_bench_fusion)
if ! timeout 300 cmake --build "$build" -j"$jobs" --target "${targets[@]}" >"$logs/build.log" 2>&1; then
  tail -n 40 "$logs/build.log"
  exit 1
fi

run codegen-tests 120 "$build/bin/primkit_codegen_tests"
run cuda-list 30 "$build/bin/primkit" list -v
run cuda-kernels 180 env PRIMKIT_CODEGEN_TEST_BACKEND=cuda "$build/bin/primkit_codegen_tests" --gtest_filter='Emu.*'
if "$build/bin/primkit" --help 2>&1 | grep -q conformance; then
  run conformance-cuda 150 "$build/bin/primkit" conformance --backend cuda --profile quick --report "$logs/conformance"
else
  step "conformance: the primkit CLI has no 'conformance' subcommand in this tree (skipped)"
fi
if [ -x "$build/bin/primkit_bench_fusion" ]; then
  run bench-fusion 120 "$build/bin/primkit_bench_fusion" --benchmark_min_time=0.2
fi
step "done in $(( $(date +%s) - start ))s, status $status"
exit $status
