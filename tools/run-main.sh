#!/usr/bin/env bash
# The main job: installs what is missing, builds, then shows every reference backend found and its op
# coverage, writing the reports to reports/ (override with PRIMKIT_REPORT_DIR).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/tools/setup.sh"
"$root/tools/build.sh"
build=${PRIMKIT_BUILD_DIR:-$root/build}
reports=${PRIMKIT_REPORT_DIR:-$root/reports}
mkdir -p "$reports"
primkit="$build/bin/primkit"
echo
echo "== primkit list"
"$primkit" list -v | tee "$reports/backends.txt"
for backend in $("$primkit" list | awk '/^[a-z0-9_-]+ +/ && $0 ~ /ABI/ {print $1}'); do
  echo
  echo "== primkit info $backend"
  "$primkit" info "$backend" --ops > "$reports/coverage-$backend.txt"
  "$primkit" info "$backend"
done
echo
echo "Reports written to $reports"
