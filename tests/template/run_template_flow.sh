#!/usr/bin/env bash
# The out-of-tree workflow a vendor follows, in a clean temporary folder:
#   1. `cmake --install` the SDK to a prefix;
#   2. `primkit new-backend` refuses bad input and writes nothing, then generates `acme`;
#   3. the generated project configures and builds against the prefix alone (warnings are errors), and its
#      smoke test passes (memory, streams, events, capability query);
#   4. `primkit conformance --profile quick`: every op NOT_SUPPORTED, nothing crashes, not conformant;
#   5. `primkit run-model` runs both models on acme through fallback with output matching the oracle, and
#      --strict refuses to fall back;
#   6. rebuilt with the worked example, add f32 PASSes conformance and runs natively;
#   7. the kernels docs/porting-guide.md shows (exp, sum, matmul) compile into the project and PASS.
# Usage: run_template_flow.sh BUILD_DIR SOURCE_DIR PYTHON
set -euo pipefail
build=$1
source_dir=$2
python=$3
# Only what the prefix holds: the installed cpu backend must be found for fallback without a plugin path.
unset PRIMKIT_PLUGIN_PATH
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
step() { echo; echo "== $*"; }
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
# Runs a command that must fail with `want_rc` and mention `want_text`.
expect_error() {
  local want_rc=$1 want_text=$2
  shift 2
  local rc=0
  "$@" > "$work/err.out" 2>&1 || rc=$?
  cat "$work/err.out"
  [ "$rc" -eq "$want_rc" ] || fail "'$*' exited $rc, expected $want_rc"
  grep -q -- "$want_text" "$work/err.out" || fail "'$*' did not say '$want_text'"
}
# Reads conformance.json and checks it with a Python expression over `results` and `summary`.
check_report() {
  local report=$1 what=$2 expression=$3
  "$python" - "$report" "$what" "$expression" <<'PY'
import json, sys
report, what, expression = sys.argv[1:4]
data = json.load(open(report))
results, summary = data["results"], data["summary"]
status = {(r["op"], r["dtype"]): r["status"] for r in results}
if not eval(expression):
    sys.exit(f"FAIL: {what}: {expression} is false; summary: {summary}")
print(f"ok: {what}")
PY
}

step "install the SDK"
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" > "$work/install.log"
primkit=$prefix/bin/primkit
test -f "$prefix/share/primkit/templates/backend/CMakeLists.txt" || fail "the template is not installed"
test -d "$prefix/lib/primkit" || fail "the plugin folder is not installed"
# The op table as C++ data, which the reference backends use and the template links (PrimKit::primops).
test -f "$prefix/include/primkit/op_info.hpp" || fail "primkit/op_info.hpp is not installed"
ls "$prefix"/lib*/libprimkit_primops.a > /dev/null 2>&1 || fail "the PrimKit::primops library is not installed"
# The rest of the kit the reference backends link: the device math (PrimKit::devmath), the fusion planner
# (PrimKit::region) and, in a build with LLVM, the code generator (PrimKit::codegen). A vendor project takes them
# from the prefix alone (kit_consumer/).
test -f "$prefix/include/primkit/devmath/devmath.hpp" || fail "the device math is not installed"
test -f "$prefix/include/primkit/region.hpp" || fail "primkit/region.hpp is not installed"
ls "$prefix"/lib*/libprimkit_region.a > /dev/null 2>&1 || fail "the PrimKit::region library is not installed"
generator=()
command -v ninja > /dev/null 2>&1 && generator=(-G Ninja)
require_codegen=OFF
if ls "$prefix"/lib*/cmake/PrimKit/PrimKitCodegenTargets.cmake > /dev/null 2>&1; then
  require_codegen=ON
  step "a vendor project links the device math, the planner and the code generator from the prefix"
else
  step "a vendor project links the device math and the planner from the prefix (this build has no code generator)"
fi
cmake -S "$source_dir/tests/template/kit_consumer" -B "$work/kit" "${generator[@]}" -DCMAKE_PREFIX_PATH="$prefix" \
  -DKIT_REQUIRE_CODEGEN=$require_codegen > "$work/kit-configure.log" 2>&1 ||
  { cat "$work/kit-configure.log"; fail "kit_consumer: configure failed"; }
cmake --build "$work/kit" > "$work/kit-build.log" 2>&1 || { cat "$work/kit-build.log"; fail "kit_consumer: build failed"; }
"$work/kit/kit_consumer" || fail "kit_consumer: a check failed"

step "new-backend refuses bad input and writes nothing"
expect_error 2 "invalid backend name" "$primkit" new-backend Acme --dir "$work/bad"
expect_error 2 "invalid backend name" "$primkit" new-backend 9acme --dir "$work/bad"
expect_error 2 "invalid backend name" "$primkit" new-backend acme-npu --dir "$work/bad"
test ! -e "$work/bad" || fail "a refused name left $work/bad behind"
mkdir "$work/occupied" && echo keep > "$work/occupied/notes.txt"
expect_error 1 "is not empty" "$primkit" new-backend acme --dir "$work/occupied"
[ "$(ls -A "$work/occupied")" = "notes.txt" ] || fail "new-backend wrote into a non-empty folder"
expect_error 1 "does not exist" "$primkit" new-backend acme --dir "$work/no/such/parent"
# An SDK without its template: the executable copied out of the prefix finds none (and writes nothing).
mkdir -p "$work/lonely/bin" && cp "$primkit" "$work/lonely/bin/"
expect_error 1 "template is missing" env LD_LIBRARY_PATH="$prefix/lib" "$work/lonely/bin/primkit" new-backend acme \
  --dir "$work/lonely/acme"
test ! -e "$work/lonely/acme" || fail "a failed new-backend left $work/lonely/acme behind"
# An existing empty folder is filled in place.
mkdir "$work/empty"
"$primkit" new-backend acme --dir "$work/empty" > /dev/null || fail "new-backend refused an empty folder"
test -f "$work/empty/src/acme_backend.cpp" || fail "new-backend did not fill the empty folder"
[ -z "$(find "$work" -name '.*primkit-new-backend-*')" ] || fail "a temporary folder was left behind"

step "new-backend acme"
"$primkit" new-backend acme --dir "$work/acme" | tee "$work/new.log"
grep -q "CMAKE_PREFIX_PATH=$prefix" "$work/new.log" || fail "the next steps do not name the install prefix"
for f in CMakeLists.txt README.md .gitignore src/acme_backend.cpp src/backend.hpp src/device.cpp src/memory.cpp \
  src/streams.cpp src/ops.cpp src/fusion.cpp src/kernels.cpp src/kernels.hpp src/kernel_add.cpp test/smoke_test.cpp; do
  test -f "$work/acme/$f" || fail "the generated project lacks $f"
done
! grep -rq "@BACKEND_" "$work/acme" || fail "a placeholder was left unsubstituted"
grep -q "ACME_ENABLE_EXAMPLE_ADD" "$work/acme/CMakeLists.txt" || fail "the example option is not named after the backend"
[ "$(grep -rc "TODO(vendor)" "$work/acme" | awk -F: '{s += $2} END {print s}')" -ge 10 ] || fail "too few TODO(vendor) markers"

configure() {
  cmake -S "$work/acme" -B "$work/acme/build" "${generator[@]}" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_CXX_FLAGS="-Wall -Wextra -Werror" "$@" > "$work/configure.log" || {
    cat "$work/configure.log"
    fail "configure failed"
  }
  cmake --build "$work/acme/build" > "$work/build.log" 2>&1 || {
    cat "$work/build.log"
    fail "build failed"
  }
  ctest --test-dir "$work/acme/build" --output-on-failure || fail "the generated smoke test failed"
}

step "build acme out of tree against the installed SDK (null backend)"
configure -DACME_ENABLE_EXAMPLE_ADD=OFF
plugin=$work/acme/build/libprimkit_backend_acme.so
test -f "$plugin" || fail "no $plugin"

step "conformance on the null backend"
rc=0
"$primkit" conformance --backend "$plugin" --profile quick --require-full --report "$work/conf-null" \
  > "$work/conf-null.log" 2>&1 || rc=$?
tail -5 "$work/conf-null.log"
# 3: the run was clean (nothing failed or crashed) but the backend is not fully conformant.
[ "$rc" -eq 3 ] || fail "conformance exited $rc, expected 3 (clean run, not fully conformant)"
check_report "$work/conf-null/conformance.json" "nothing crashed, timed out or failed" \
  'summary["crash"] == 0 and summary["timeout"] == 0 and summary["fail"] == 0'
check_report "$work/conf-null/conformance.json" "every measured pair is NOT_SUPPORTED" \
  'summary["pass"] == 0 and summary["not_supported"] > 1000 and all(s in ("NOT_SUPPORTED", "NO_REFERENCE") for s in status.values())'
check_report "$work/conf-null/conformance.json" "the report says not conformant" 'summary["fully_conformant"] is False'
grep -q "NOT FULLY CONFORMANT" "$work/conf-null.log" || fail "the console does not say the backend is not conformant"

step "run-model on the null backend: everything falls back to cpu"
for model in mlp transformer; do
  "$primkit" run-model --backend "$plugin" --model "$model" | tee "$work/run-$model.log" || fail "run-model $model failed"
  grep -q "^PASS" "$work/run-$model.log" || fail "run-model $model did not PASS"
  grep -Eq "^fallback: [0-9]+ ops ran on cpu instead of acme: [0-9]+ launches, [1-9][0-9]* bytes copied" \
    "$work/run-$model.log" || fail "run-model $model reports no fallback copies"
  grep -Eq "^  matmul launches=[1-9]" "$work/run-$model.log" || fail "run-model $model: matmul did not fall back"
done
expect_error 1 "strict" "$primkit" run-model --backend "$plugin" --model mlp --strict

step "rebuild with the worked example (add f32)"
configure -DACME_ENABLE_EXAMPLE_ADD=ON
rc=0
"$primkit" conformance --backend "$plugin" --profile quick --report "$work/conf-add" > "$work/conf-add.log" 2>&1 || rc=$?
tail -5 "$work/conf-add.log"
[ "$rc" -le 1 ] || fail "conformance exited $rc"
check_report "$work/conf-add/conformance.json" "add f32 PASSes" 'status[("add", "f32")] == "PASS"'
# (The streams stage's rows, dtype "-", run on add f32 too and may pass: only (op, dtype) pairs are counted.)
check_report "$work/conf-add/conformance.json" "add f32 is the only pass, nothing failed" \
  'sum(1 for (o, d), s in status.items() if s == "PASS" and d != "-") == 1 and summary["fail"] == 0 and summary["crash"] == 0 and status[("add", "f64")] == "NOT_SUPPORTED"'
"$primkit" run-model --backend "$plugin" --model mlp | tee "$work/run-add.log" || fail "run-model mlp failed"
grep -q "^PASS" "$work/run-add.log" || fail "run-model mlp did not PASS with native add"
grep -q "^  add  *native on acme" "$work/run-add.log" || fail "add does not run natively"
! grep -q "^  add launches=" "$work/run-add.log" || fail "add still falls back"

step "the porting guide's kernels: exp, sum, matmul"
# Every C++ block of the guide that starts with "// src/kernel_<op>.cpp" is a file the reader writes; the table
# rows and declarations are the ones the guide shows.
"$python" - "$source_dir/docs/porting-guide.md" "$work/acme" <<'PY'
import pathlib, re, sys
guide, project = pathlib.Path(sys.argv[1]).read_text(), pathlib.Path(sys.argv[2])
files = {}
for block in re.findall(r"```cpp\n(.*?)```", guide, re.S):
    match = re.match(r"// (src/kernel_\w+\.cpp)", block)
    if match:
        files[match.group(1)] = block
assert sorted(files) == ["src/kernel_exp.cpp", "src/kernel_matmul.cpp", "src/kernel_sum.cpp"], sorted(files)
for name, text in files.items():
    (project / name).write_text(text)
rows = re.findall(r"^    \{PK_OP_(?:EXP|SUM|MATMUL),.*?\},$", guide, re.M | re.S)
assert len(rows) == 3, rows
kernels_cpp = project / "src/kernels.cpp"
kernels_cpp.write_text(kernels_cpp.read_text().replace("    // TODO(vendor): one row per op", "\n".join(rows) + "\n    // TODO(vendor): one row per op"))
kernels_hpp = project / "src/kernels.hpp"
declarations = "".join(f"pk_status {fn}(const Launch &launch);\n" for fn in ("exp_float", "sum_f32", "matmul_f32"))
kernels_hpp.write_text(kernels_hpp.read_text().replace("// TODO(vendor): declare each kernel", declarations + "// TODO(vendor): declare each kernel"))
cmake = project / "CMakeLists.txt"
cmake.write_text(cmake.read_text().replace("src/kernels.cpp)", "src/kernels.cpp src/kernel_exp.cpp src/kernel_sum.cpp src/kernel_matmul.cpp)"))
print("ok: wrote", ", ".join(sorted(files)))
PY
configure -DACME_ENABLE_EXAMPLE_ADD=ON
rc=0
"$primkit" conformance --backend "$plugin" --profile quick --ops add,exp,sum,matmul --dtypes f16,bf16,f32,f64 \
  --report "$work/conf-guide" > "$work/conf-guide.log" 2>&1 || rc=$?
tail -5 "$work/conf-guide.log"
[ "$rc" -eq 0 ] || fail "conformance of the guide's kernels exited $rc"
check_report "$work/conf-guide/conformance.json" "add, exp, sum and matmul f32 PASS; exp in every float dtype" \
  'all(status[(op, "f32")] == "PASS" for op in ("add", "exp", "sum", "matmul")) and all(status[("exp", d)] == "PASS" for d in ("f16", "bf16", "f64"))'
check_report "$work/conf-guide/conformance.json" "nothing else passes or fails" 'summary["pass"] == 7 and summary["fail"] == 0'
"$primkit" run-model --backend "$plugin" --model transformer | tee "$work/run-guide.log" || fail "run-model transformer failed"
grep -q "^PASS" "$work/run-guide.log" || fail "run-model transformer did not PASS with native kernels"
grep -q "^  matmul  *native on acme" "$work/run-guide.log" || fail "matmul does not run natively"
! grep -Eq "^  (add|matmul|exp|sum) launches=" "$work/run-guide.log" || fail "an implemented op still falls back"

echo
echo "template flow: ok"
