#!/usr/bin/env bash
# The benchmarks: installs what is missing (with the libtorch peer), builds, runs every benchmark binary and
# writes its JSON plus one summary table (the median of each paired ratio) to reports/bench/ (override with
# PRIMKIT_REPORT_DIR). Extra arguments go to every binary, e.g. --benchmark_filter=add.
# Quiet the machine first: the ratios are paired, but a busy neighbour still widens their spread.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/tools/setup.sh" --peers
"$root/tools/build.sh"
build=${PRIMKIT_BUILD_DIR:-$root/build}
out=${PRIMKIT_REPORT_DIR:-$root/reports}/bench
mkdir -p "$out"
ran=()
for name in cpu torch fusion opencl; do
  bin="$build/bin/primkit_bench_$name"
  if [ ! -x "$bin" ]; then
    echo "== primkit_bench_$name: not built (its dependency is missing), skipped"
    continue
  fi
  echo "== primkit_bench_$name"
  "$bin" --benchmark_out="$out/$name.json" --benchmark_out_format=json "$@"
  ran+=("$out/$name.json")
done
"${PRIMKIT_PYTHON:-python3}" "$root/tools/bench-summary.py" "${ran[@]}" | tee "$out/summary.md"
# The PyTorch bridge against eager PyTorch and Inductor (PyPI torch, same process and threads).
echo "== bench/torch_bridge.py"
PYTHONPATH="$build/python" "${PRIMKIT_PYTHON:-python3}" "$root/bench/torch_bridge.py" | tee "$out/torch_bridge.txt"
# Single kernels against PyPI torch, each writing into a caller's buffer (eager .out and Inductor).
echo "== bench/torch_kernels.py"
PYTHONPATH="$build/python" "${PRIMKIT_PYTHON:-python3}" "$root/bench/torch_kernels.py" | tee "$out/torch_kernels.txt"
