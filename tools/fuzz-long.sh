#!/usr/bin/env bash
# Long fuzzing: every libFuzzer harness in fuzz/ for SECONDS each (default 3600), one after another, on the ASan +
# UBSan build that tools/run-asan.sh makes (built here if missing), then the op-table generator's property test
# with many more examples. New interesting inputs are kept in build-asan/fuzz-long/<target>/ (copy the ones worth
# keeping into fuzz/corpus/<target>/ with `fuzz_<target> -merge=1`); a finding's reproducer lands in
# build-asan/fuzz-artifacts/. Prints executions and findings per target.
#   tools/fuzz-long.sh [SECONDS] [TARGET...]      e.g. tools/fuzz-long.sh 14400 launch graph
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${PRIMKIT_ASAN_BUILD_DIR:-$root/build-asan}
seconds=${1:-3600}
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(launch query graph attrs plugin op_table)
if [ ! -x "$build/bin/fuzz_launch" ]; then
  PRIMKIT_FUZZ_SECONDS=1 "$root/tools/run-asan.sh" -R '^fuzz\.replay\.' >/dev/null
fi
cmake --build "$build" --target primkit_fuzzers >/dev/null
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}:allocator_may_return_null=1  # see tools/run-asan.sh
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
artifacts=$build/fuzz-artifacts
mkdir -p "$artifacts"
marker=$(mktemp)  # artifacts newer than this are this run's findings
status=0
for t in "${targets[@]}"; do
  corpus=$build/fuzz-long/$t
  mkdir -p "$corpus"
  log=$build/fuzz-long-$t.log
  # -fork: a finding is recorded and fuzzing goes on (each crash gets its own artifact); -ignore_crashes keeps the
  # other workers running.
  "$build/bin/fuzz_$t" -max_total_time="$seconds" -timeout=60 -rss_limit_mb=4096 -malloc_limit_mb=1000000000 \
    -print_final_stats=1 \
    -fork="${PRIMKIT_FUZZ_FORKS:-1}" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
    -artifact_prefix="$artifacts/$t-" "$corpus" "$root/fuzz/corpus/$t" >"$log" 2>&1 || status=1
  execs=$(grep -oE 'exec/s: [0-9]+|stat::number_of_executed_units: *[0-9]+|#[0-9]+' "$log" | tail -1)
  crashes=$(find "$artifacts" -name "$t-*" -newer "$marker" | wc -l)
  echo "fuzz-long: fuzz_$t: ${seconds} s, last stats: ${execs:-?}, new findings: $crashes (log: $log)"
done
PRIMKIT_HYPOTHESIS_EXAMPLES=${PRIMKIT_HYPOTHESIS_EXAMPLES:-5000} "${PRIMKIT_PYTHON:-python3}" -m pytest -q \
  -p no:cacheprovider "$root/tests/primops/test_gen_ops_fuzz.py" || status=1
rm -f "$marker"
exit $status
