#!/usr/bin/env bash
# gpu-check.sh — the checks of the cuda backend that need an NVIDIA GPU, in one run (budget: under 8 minutes).
#   tools/gpu-check.sh                   build what the checks need into build-gpu/ (PRIMKIT_BUILD_DIR), then run
#   tools/gpu-check.sh --prebuilt DIR    run a bundle from tools/gpu-bundle.sh (for a GPU host without LLVM 19)
# Steps, each with its own time limit; a failed step is reported and the next one still runs:
#   1. the GPU and the cuda backend's device listing (primkit list -v),
#   2. every generated kernel on the GPU against the code generator tests' references: the single-op sweep in
#      parallel shards, then the hand-checked suites (the cuda-emu tests re-run with the cuda plugin),
#   3. primkit conformance --backend cuda --profile quick (one child process per CPU),
#   4. the native collectives on NCCL, one rank (primkit conformance --collectives, engine "native"),
#   5. primkit_bench_cuda (ratios against the GPU's own copy bandwidth and the raw driver launch), then the same
#      operations through PyTorch for the peer figures when python3 has torch,
#   6. (build mode only) the full code generator tests, PTX through ptxas included.
# Exit status: non-zero if any step failed. Logs go to $PRIMKIT_GPU_LOGS (default: <build or bundle>/gpu-check).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
prebuilt=""
if [ "${1:-}" = "--prebuilt" ]; then
  prebuilt=$(cd "${2:?--prebuilt needs the bundle folder}" && pwd)
fi
jobs=${PRIMKIT_JOBS:-$(nproc)}
start=$(date +%s)
status=0
step() { echo "== [$(($(date +%s) - start))s] $*"; }

if [ -n "$prebuilt" ]; then
  bin=$prebuilt/bin
  plugin=$prebuilt/lib/primkit/libprimkit_backend_cuda.so
  logs=${PRIMKIT_GPU_LOGS:-$prebuilt/gpu-check}
  # Only PrimKit's own processes see the bundled libraries (python and nvidia-smi keep the system's).
  pk_env=(env "LD_LIBRARY_PATH=$prebuilt/lib:$prebuilt/deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    "PRIMKIT_PLUGIN_PATH=$prebuilt/lib/primkit")
else
  build=${PRIMKIT_BUILD_DIR:-$root/build-gpu}
  bin=$build/bin
  plugin=$build/lib/primkit/libprimkit_backend_cuda.so
  logs=${PRIMKIT_GPU_LOGS:-$build/gpu-check}
  pk_env=(env)
fi
mkdir -p "$logs"

run() { # run NAME TIMEOUT_S CMD...: logs to $logs/NAME.log, records failure, keeps going
  local name=$1 limit=$2
  shift 2
  step "$name"
  if timeout "$limit" "$@" >"$logs/$name.log" 2>&1; then
    tail -n 25 "$logs/$name.log"
  else
    echo "!! $name failed (exit $?); last lines of $logs/$name.log:"
    tail -n 60 "$logs/$name.log"
    status=1
  fi
}

if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total,clocks.max.sm --format=csv,noheader || true
else
  echo "gpu-check: nvidia-smi not found; the cuda backend will report 0 devices (continuing)"
fi

if [ -z "$prebuilt" ]; then
  step "configure + build ($build)"
  generator=()
  command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
  if ! cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPRIMKIT_WITH_LLVM=ON \
    -DPRIMKIT_WITH_OPENCL=OFF -DPython3_EXECUTABLE="$(command -v "${PRIMKIT_PYTHON:-python3}")" \
    >"$logs/configure.log" 2>&1; then
    tail -n 30 "$logs/configure.log"
    exit 1
  fi
  if ! timeout 300 cmake --build "$build" -j"$jobs" --target primkit_codegen_tests primkit_backend_cuda \
    primkit_backend_cuda-emu primkit_backend_cpu primkit primkit_bench_cuda >"$logs/build.log" 2>&1; then
    tail -n 40 "$logs/build.log"
    exit 1
  fi
else
  echo "gpu-check: bundle of commit $(cat "$prebuilt/COMMIT" 2>/dev/null || echo '?')"
fi

run cuda-list 60 "${pk_env[@]}" "$bin/primkit" list -v

# The single-op sweep compiles ~1500 kernels: shards in parallel, one process each.
shards=$((jobs < 8 ? jobs : 8))
step "cuda-kernels: the single-op sweep in $shards shards"
pids=()
for ((k = 0; k < shards; ++k)); do
  timeout 240 "${pk_env[@]}" PRIMKIT_CODEGEN_TEST_BACKEND="$plugin" PRIMKIT_TEST_SHARD="$k/$shards" \
    "$bin/primkit_codegen_tests" --gtest_filter='Emu.EverySupportedSingleOpMatchesTheReference' \
    >"$logs/cuda-kernels-shard$k.log" 2>&1 &
  pids+=($!)
done
for ((k = 0; k < shards; ++k)); do
  if wait "${pids[$k]}"; then
    grep -E "checked [0-9]+|PASSED|SKIPPED" "$logs/cuda-kernels-shard$k.log" | head -3
  else
    echo "!! shard $k failed; its failures:"
    grep -E "Failure|error:|element|FAILED" "$logs/cuda-kernels-shard$k.log" | head -40
    status=1
  fi
done
run cuda-kernels-hand-checked 240 "${pk_env[@]}" PRIMKIT_CODEGEN_TEST_BACKEND="$plugin" \
  "$bin/primkit_codegen_tests" --gtest_filter='Emu.*:EmuOps.*:EmuComplex.*:-Emu.EverySupportedSingleOp*'

if "${pk_env[@]}" "$bin/primkit" --help 2>&1 | grep -q conformance; then
  run conformance-cuda 300 "${pk_env[@]}" "$bin/primkit" conformance --backend "$plugin" --profile quick \
    --jobs "$jobs" --report "$logs/conformance"
fi

# The cuda backend's native collectives on NCCL, one rank on this GPU (NCCL allows one rank per device; the
# multi-rank rows need a second GPU): the conformance stage with the native engine asked for by name, so a missing
# NCCL or driver is a failure with its reason, not a quiet fallback to MPI.
if "${pk_env[@]}" "$bin/primkit" conformance --help 2>&1 | grep -q collectives; then
  run collectives-nccl 60 "${pk_env[@]}" PRIMKIT_COLLECTIVES_ENGINE=native "$bin/primkit" conformance --backend "$plugin" \
    --collectives --jobs 1 --report "$logs/collectives"
fi

if [ -x "$bin/primkit_bench_cuda" ]; then
  run bench-cuda 150 "${pk_env[@]}" PRIMKIT_BENCH_CUDA_PLUGIN="$plugin" "$bin/primkit_bench_cuda" --benchmark_min_time=0.2 \
    --benchmark_out="$logs/bench-cuda.json" --benchmark_out_format=json
fi
run torch-peer 90 "${PRIMKIT_PYTHON:-python3}" "$root/tools/gpu-torch-peer.py"

if [ -z "$prebuilt" ]; then
  run codegen-tests 300 "$bin/primkit_codegen_tests"
fi
step "done in $(($(date +%s) - start))s, status $status"
exit $status
