#!/usr/bin/env python3
"""The op table's coverage: every primitive of sdk/primops/ops.yaml has what a conformant PrimKit needs, and no
code names an op the table does not have.

    test_op_coverage.py --primkit PATH --backend NAME=PLUGIN [--backend NAME=PLUGIN ...]

Fails (exit 1, one line per gap) when
  - a primitive has no independent check of the oracle in tests/oracle/test_oracle_numpy.py (CHECKS);
  - a primitive, for some dtype of its row, has no native kernel in a reference backend given with --backend
    (`primkit info --json`): the CPU backend, the code generator (cuda-emu) and OpenCL. A dtype that no primitive
    supports on a backend is a property of its device (PoCL without cl_khr_fp16 has no f16 at all), reported, not
    a gap; a dtype some primitives support and others lack is a forgotten kernel;
  - Python or C++ code names an op (b.op("..."), _reduce("..."), find_op("..."), ...) that is not a row.
The oracle's own kernels are covered by oracle.OracleCoverage.* (C++). Before the real checks, each checker is run
on a planted gap and must report it, so a checker that cannot fail fails the test.
"""
import argparse
import json
import os
import re
import subprocess
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TABLE = os.path.join(ROOT, "sdk", "primops", "ops.yaml")

# Calls whose first argument is an op name, in the Python package and in the C++ sources.
PY_NAME_CALL = re.compile(r"\b(?:[A-Za-z_]\w*\.)?(?:op|_reduce|info|call|find_op|elementwise)\(\s*\"([a-z][a-z0-9_]*)\"")
CPP_NAME_CALL = re.compile(r"\b(?:find_op|evaluate|op_id_of)\(\s*\"([a-z][a-z0-9_]*)\"")
# The bridge's ATen-to-table renames: the values are table names.
PY_RENAMES = re.compile(r"SPECIAL_NAMES\s*=\s*\{([^}]*)\}")


def table_ops():
    with open(TABLE, encoding="utf-8") as f:
        table = yaml.safe_load(f)
    return {op["name"]: op.get("tier", "primitive") for op in table["ops"]}


def oracle_check_gaps(ops, checks):
    return ["%s: no independent oracle check in tests/oracle/test_oracle_numpy.py (add a @check)" % n
            for n, tier in sorted(ops.items()) if tier == "primitive" and n not in checks]


def device_lacks(ops, info):
    """Dtypes no primitive runs natively on this backend's device (what the device cannot do at all)."""
    answered = info.get("ops", {})
    native, admitted = {}, {}
    for n, tier in ops.items():
        if tier != "primitive" or n not in answered:
            continue
        for d, how in answered[n]["dtypes"].items():
            admitted[d] = True
            native[d] = native.get(d, False) or how == "native"
    return sorted(d for d in admitted if not native[d])


def kernel_gaps(backend, ops, info):
    gaps = []
    answered = info.get("ops", {})
    lacks = set(device_lacks(ops, info))
    for n, tier in sorted(ops.items()):
        if tier != "primitive":
            continue
        if n not in answered:
            gaps.append("%s: %s's info does not list it" % (n, backend))
            continue
        missing = [d for d, how in answered[n]["dtypes"].items() if how != "native" and d not in lacks]
        if missing:
            gaps.append("%s: no native %s kernel for %s" % (n, backend, ", ".join(missing)))
    return gaps


def names_in(text, is_python):
    found = set(m.group(1) for m in (PY_NAME_CALL if is_python else CPP_NAME_CALL).finditer(text))
    if is_python:
        for m in PY_RENAMES.finditer(text):
            found.update(re.findall(r":\s*\"([a-z][a-z0-9_]*)\"", m.group(1)))
    return found


def unknown_name_gaps(ops, sources):
    """sources: [(path, text)]; every op name the code uses must be a row of the table."""
    gaps = []
    for path, text in sources:
        for name in sorted(names_in(text, path.endswith(".py")) - set(ops)):
            gaps.append("%s: names op %r, which is not in ops.yaml" % (os.path.relpath(path, ROOT), name))
    return gaps


def source_files():
    roots = [("python/primkit", (".py",)), ("sdk", (".cpp", ".hpp")), ("backends", (".cpp", ".hpp")),
             ("conformance", (".cpp", ".hpp")), ("tools", (".cpp", ".hpp"))]
    out = []
    for rel, exts in roots:
        for dirpath, _, files in os.walk(os.path.join(ROOT, rel)):
            for f in sorted(files):
                if f.endswith(exts):
                    p = os.path.join(dirpath, f)
                    with open(p, encoding="utf-8", errors="replace") as fh:
                        out.append((p, fh.read()))
    return out


def self_test():
    """Each checker must report a planted gap (a checker that cannot fail proves nothing)."""
    ops = {"exp": "primitive", "softmax": "composite"}
    assert oracle_check_gaps(ops, {"softmax": None}), "oracle-check gap not reported"
    assert not oracle_check_gaps(ops, {"exp": None}), "oracle-check false alarm"
    info = {"ops": {"exp": {"tier": "primitive", "dtypes": {"f32": "native", "f16": "decomposed"}},
                    "log": {"tier": "primitive", "dtypes": {"f32": "native", "f16": "native"}}}}
    assert kernel_gaps("cpu", dict(ops, log="primitive"), info), "missing kernel not reported"
    assert kernel_gaps("cpu", {"sqrt": "primitive"}, info), "unlisted primitive not reported"
    no_f16 = {"ops": {"exp": {"tier": "primitive", "dtypes": {"f32": "native", "f16": "decomposed"}},
                      "log": {"tier": "primitive", "dtypes": {"f32": "native", "f16": "decomposed"}}}}
    both = {"exp": "primitive", "log": "primitive"}
    assert device_lacks(both, no_f16) == ["f16"] and not kernel_gaps("opencl", both, no_f16), "device dtype"
    planted = [(os.path.join(ROOT, "python/x.py"), 'b.op("exp", x)\nv = _reduce("expp")\nSPECIAL_NAMES = {"a": "sofmax"}'),
               (os.path.join(ROOT, "sdk/x.cpp"), 'meta::find_op("softmax"); find_op("softmaxx");')]
    gaps = unknown_name_gaps(ops, planted)
    assert len(gaps) == 3 and all(("expp" in g) or ("sofmax" in g) or ("softmaxx" in g) for g in gaps), gaps


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--primkit", required=True, help="the primkit command line tool")
    ap.add_argument("--backend", action="append", default=[], metavar="NAME=PLUGIN",
                    help="a reference backend whose primitives must all be native (repeatable)")
    args = ap.parse_args()
    self_test()
    ops = table_ops()
    sys.path.insert(0, HERE)
    import test_oracle_numpy  # noqa: E402 (its CHECKS registry; importing runs no check)

    gaps = oracle_check_gaps(ops, test_oracle_numpy.CHECKS)
    notes = []
    for spec in args.backend:
        name, _, plugin = spec.partition("=")
        proc = subprocess.run([args.primkit, "info", plugin or name, "--json"], capture_output=True, text=True)
        if proc.returncode != 0:
            sys.exit("primkit info %s --json failed (%d): %s" % (plugin, proc.returncode, proc.stderr.strip()))
        info = json.loads(proc.stdout)
        gaps += kernel_gaps(name, ops, info)
        lacks = device_lacks(ops, info)
        notes.append("%s%s" % (name, " (its device has no %s at all)" % ", ".join(lacks) if lacks else ""))
    gaps += unknown_name_gaps(ops, source_files())
    prims = sum(1 for t in ops.values() if t == "primitive")
    if gaps:
        print("%d coverage gaps in the op table's %d primitives and the code that names ops:" % (len(gaps), prims))
        for g in gaps:
            print("  " + g)
        sys.exit(1)
    print("op coverage: %d primitives each have an oracle check and native kernels for every dtype on %s; every op "
          "name in the code is a row of ops.yaml" % (prims, ", ".join(notes)))


if __name__ == "__main__":
    main()
