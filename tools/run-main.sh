#!/usr/bin/env bash
# The main job: installs what is missing, builds, lists every backend found, then runs the conformance suite on
# each reference backend present and writes one report folder per backend to reports/ (override with
# PRIMKIT_REPORT_DIR; PRIMKIT_PROFILE=quick|full, default full). Exits non-zero if any backend has a FAIL,
# CRASH, TIMEOUT or unexpected pass.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/tools/setup.sh"
"$root/tools/build.sh"
build=${PRIMKIT_BUILD_DIR:-$root/build}
reports=${PRIMKIT_REPORT_DIR:-$root/reports}
profile=${PRIMKIT_PROFILE:-full}
mkdir -p "$reports"
primkit="$build/bin/primkit"
echo
echo "== primkit list"
"$primkit" list -v | tee "$reports/backends.txt"
status=0
summary=()
# The backends discovery loaded, by name, from the machine-readable listing (a backend without a device is listed
# too: its conformance run below says so and is skipped).
backends=$("$primkit" list --json | python3 -c 'import json, sys; print("\n".join(b["name"] for b in json.load(sys.stdin)["backends"]))')
for backend in $backends; do
  echo
  echo "== primkit info $backend"
  "$primkit" info "$backend" --ops > "$reports/coverage-$backend.txt"
  "$primkit" info "$backend"
  echo
  echo "== primkit conformance --backend $backend --profile $profile"
  mkdir -p "$reports/$backend"
  rc=0
  "$primkit" conformance --backend "$backend" --profile "$profile" --report "$reports/$backend" \
    2> >(tee "$reports/$backend/console.txt" >&2) | tee -a "$reports/$backend/console.txt" || rc=$?
  if [ "$rc" -eq 2 ] && grep -q "no devices" "$reports/$backend/console.txt"; then
    # A backend without a device here (e.g. cuda on a machine without a GPU) has nothing to measure.
    summary+=("$backend: skipped, no devices ($(grep -m1 'no devices' "$reports/$backend/console.txt"))")
    continue
  fi
  summary+=("$backend: exit $rc, report $reports/$backend/conformance.html")
  [ "$rc" -eq 0 ] || status=1
done
echo
echo "== summary"
printf '%s\n' "${summary[@]}"
echo "Reports written to $reports"
exit $status
