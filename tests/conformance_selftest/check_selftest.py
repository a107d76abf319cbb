#!/usr/bin/env python3
"""Runs `primkit conformance` on one backend and checks what conformance.json says about it.

A planted-bug backend must be caught: some result for the expected op carries one of the expected statuses
(FAIL for a wrong value, CRASH for the segfault, TIMEOUT for the hang) and the run's exit code says the backend
does not conform. The clean CPU backend, run over the same ops, must pass every (op, dtype) it is asked about,
which shows that a caught bug is the planted defect and not a false alarm of the suite.

  check_selftest.py --primkit build/bin/primkit --backend path/to/libprimkit_backend_bug_exp_4ulp.so \\
      --ops exp --dtypes f32 --report DIR --expect exp=FAIL
  check_selftest.py --primkit build/bin/primkit --backend cpu --ops exp,neg --dtypes f32 --report DIR --clean

The collectives stage runs under a launcher: --launcher "mpirun -np 2" puts it before the command, and
--expect OP@DTYPE=STATUS names the dtype of a row too (collectives:all_gather@f32=FAIL).
"""
import shlex
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

# Statuses that make `primkit conformance` exit non-zero.
FAILING = {"FAIL", "CRASH", "TIMEOUT", "NO_REFERENCE", "UNEXPECTED_PASS"}


def table(results):
    return "\n".join(
        "  {:<24} {:<8} {:<16} cases={:<5} max_ulp={}".format(
            r.get("op"), r.get("dtype"), r.get("status"), r.get("cases"), r.get("max_ulp"))
        for r in results)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--primkit", required=True, help="the primkit command line")
    p.add_argument("--backend", required=True, help="backend name or plugin path")
    p.add_argument("--ops", required=True, help="op glob(s), ','-separated")
    p.add_argument("--dtypes", default="", help="dtype list, ','-separated")
    p.add_argument("--report", required=True, help="report folder (emptied first)")
    p.add_argument("--expect", action="append", default=[], metavar="OP[@DTYPE]=STATUS[|STATUS...]",
                   help="a result for OP (of DTYPE) must have one of these statuses (repeatable)")
    p.add_argument("--expect-text", action="append", default=[], metavar="TEXT",
                   help="some result's message must contain TEXT (repeatable)")
    p.add_argument("--launcher", default="", help="command line to run primkit under, e.g. 'mpirun -np 2'")
    p.add_argument("--backend-name", default="", help="the name conformance.json must give the backend")
    p.add_argument("--clean", action="store_true", help="every result must be PASS and the exit code 0")
    p.add_argument("--budget", type=float, default=60.0, help="seconds the run may take")
    p.add_argument("cli_args", nargs="*", help="more arguments for `primkit conformance` (after --)")
    a = p.parse_args()
    if a.clean == bool(a.expect):
        p.error("give either --clean or at least one --expect")

    shutil.rmtree(a.report, ignore_errors=True)  # a stale conformance.json must not pass for this run's
    os.makedirs(a.report)
    cmd = shlex.split(a.launcher) + [a.primkit, "conformance", "--backend", a.backend, "--ops", a.ops, "--profile", "quick",
           "--report", a.report]
    if a.dtypes:
        cmd += ["--dtypes", a.dtypes]
    cmd += a.cli_args
    start = time.monotonic()
    try:
        run = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             timeout=a.budget)
    except subprocess.TimeoutExpired as e:
        print("FAILED: `{}` took more than {:.0f} s (a hang must cost a TIMEOUT entry, not the run)".format(
            " ".join(cmd), a.budget))
        print((e.stdout or "")[-4000:] if isinstance(e.stdout, str) else "")
        return 1
    seconds = time.monotonic() - start
    output_tail = run.stdout[-4000:]
    print("$ {}\n(exit {}, {:.1f} s)".format(" ".join(cmd), run.returncode, seconds))

    path = os.path.join(a.report, "conformance.json")
    try:
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        print("FAILED: no readable {}: {}\n{}".format(path, e, output_tail))
        return 1
    results = report.get("results", [])
    print(table(results))

    problems = []
    if not results:
        problems.append("the report lists no result: the op glob or dtypes matched nothing")
    if a.backend_name and report.get("backend") != a.backend_name:
        problems.append("the report names the backend {!r}, not {!r}".format(report.get("backend"),
                                                                             a.backend_name))
    if a.clean:
        bad = [r for r in results if r.get("status") != "PASS"]
        if bad:
            problems.append("the clean backend does not pass:\n" + table(bad))
        if run.returncode != 0:
            problems.append("exit code {} for a clean run".format(run.returncode))
    else:
        must_fail = False
        for e in a.expect:
            op, _, statuses = e.partition("=")
            op, _, dtype = op.partition("@")
            wanted = set(statuses.split("|"))
            must_fail = must_fail or wanted <= FAILING
            hits = [r for r in results if r.get("op") == op and r.get("status") in wanted and
                    (not dtype or r.get("dtype") == dtype)]
            if not hits:
                problems.append("not caught: no result for {}{} with status {}".format(
                    op, " " + dtype if dtype else "", "|".join(sorted(wanted))))
        for text in a.expect_text:
            if not any(text in r.get("message", "") for r in results):
                problems.append("no result's message says {!r}".format(text))
        if must_fail and run.returncode == 0:
            problems.append("the planted bug was caught but the exit code is 0")

    if problems:
        print("FAILED:\n- " + "\n- ".join(problems))
        print("--- output of primkit conformance (tail) ---\n" + output_tail)
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
