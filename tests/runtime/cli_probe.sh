#!/bin/sh
# cli_probe.sh PRIMKIT PLUGIN_DIR — the command line over a folder of plugins that abort, exit, hang or print
# (beside a good one): `primkit list` still lists the good ones and names each bad one with the probe's
# verdict, exits 0; `primkit list --json` is one valid JSON document on stdout, whatever the plugins print;
# `primkit info` of a bad backend exits 2 with the reason; a second run answers from the probe cache.
set -u
primkit=$1
plugins=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/primkit-cli-probe.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export PRIMKIT_PLUGIN_PATH="$plugins" PRIMKIT_CACHE_DIR="$tmp/cache" PRIMKIT_PROBE_TIMEOUT=1
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

"$primkit" list >"$tmp/list.txt" 2>"$tmp/list.err" || fail "primkit list exited $?"
for want in "sim " "chatty " \
  "libprimkit_backend_abort_entry.so was not loaded: probe: killed by SIGABRT during entry" \
  "libprimkit_backend_exit_open.so was not loaded: probe: exited with status 0 during open" \
  "libprimkit_backend_hang_open.so was not loaded: probe: hung (no answer within 1 s) during open"; do
  grep -qF "$want" "$tmp/list.txt" || fail "primkit list does not show '$want':
$(cat "$tmp/list.txt")"
done

# The warm run gets a 30 s probe timeout: answered from the cache it takes well under that even on a loaded
# machine (a sanitizer build beside other jobs took 2.6 s), while a probe of the hanging plugin would wait it out.
start=$(date +%s%N)
PRIMKIT_PROBE_TIMEOUT=30 "$primkit" list --json >"$tmp/list.json" 2>"$tmp/json.err" ||
  fail "primkit list --json exited $?"
end=$(date +%s%N)
if command -v python3 >/dev/null 2>&1; then
  python3 - "$tmp/list.json" <<'PY' || fail "primkit list --json is not the JSON expected: $(cat "$tmp/list.json")"
import json, sys
doc = json.load(open(sys.argv[1]))
names = [b["name"] for b in doc["backends"]]
assert "sim" in names and "chatty" in names, names
bad = " ".join(doc["load_errors"])
for reason in ("killed by SIGABRT during entry", "exited with status 0 during open", "hung (no answer within 1 s)"):
    assert reason in bad, (reason, bad)
PY
fi
grep -q "chatty: hello from open" "$tmp/list.json" && fail "a plugin's stdout reached the JSON document"
grep -q "chatty: hello from open" "$tmp/json.err" || fail "the plugin's stdout should go to stderr under --json"
# The cache answers the second run: no wait for the hanging plugin's (now 30 s) timeout.
ms=$(((end - start) / 1000000))
[ "$ms" -lt 15000 ] || fail "warm 'primkit list --json' took $ms ms: the probe cache was not used"

"$primkit" info hang_open >"$tmp/info.txt" 2>"$tmp/info.err"
rc=$?
[ "$rc" -eq 2 ] || fail "primkit info hang_open exited $rc, want 2"
grep -qF "probe: hung" "$tmp/info.err" || fail "primkit info hang_open does not say why: $(cat "$tmp/info.err")"
"$primkit" info sim >/dev/null 2>"$tmp/info_sim.err" || fail "primkit info sim exited $?: $(cat "$tmp/info_sim.err")"
echo "ok: list, list --json (warm: $ms ms), info"
