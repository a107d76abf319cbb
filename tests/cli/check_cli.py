#!/usr/bin/env python3
"""The `primkit` command line's contract (issue 28): --help on every command, unknown commands and flags and
malformed values rejected with exit status 2 and a message naming the command, --version with the project's and
the ABI's versions, and the JSON documents of `list --json` and `info --json`.

The expected versions are read from the sources (CMakeLists.txt, primkit.h), not from the binary; the expected
coverage of the test backend `sim` is written by hand from tests/runtime/plugins/sim_backend.c (add and mul on
f32, natively; nothing else).

  check_cli.py PRIMKIT SOURCE_ROOT SIM_PLUGIN
"""
import json
import os
import re
import subprocess
import sys
import tempfile

COMMANDS = ["list", "info", "conformance", "new-backend", "run-model"]
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)


def run(args, env):
    p = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
    return p.returncode, p.stdout, p.stderr


def source_versions(root):
    with open(os.path.join(root, "CMakeLists.txt"), encoding="utf-8") as f:
        project = re.search(r"project\(PrimKit VERSION (\d+\.\d+\.\d+)", f.read()).group(1)
    with open(os.path.join(root, "sdk", "include", "primkit", "primkit.h"), encoding="utf-8") as f:
        header = f.read()
    major = re.search(r"#define PK_ABI_VERSION_MAJOR (\d+)", header).group(1)
    minor = re.search(r"#define PK_ABI_VERSION_MINOR (\d+)", header).group(1)
    return project, "%s.%s" % (major, minor)


def check_usage_errors(primkit, sim, env):
    # (arguments, the command the message must name, a word the message must contain)
    rejected = [
        (["bogus"], "primkit", "unknown command 'bogus'"),
        (["--bogus"], "primkit", "--bogus"),
        (["list", "-x"], "primkit list", "-x"),
        (["list", "extra"], "primkit list", "extra"),
        (["info"], "primkit info", "BACKEND is required"),
        (["info", "--help-me"], "primkit info", "--help-me"),
        (["info", sim, "--bogus"], "primkit info", "--bogus"),
        (["info", sim, "second"], "primkit info", "second"),
        (["conformance"], "primkit conformance", "--backend is required"),
        (["conformance", "--backend", sim, "--bogus"], "primkit conformance", "--bogus"),
        (["conformance", "--backend", sim, "--seed", "abc"], "primkit conformance", "--seed"),
        (["conformance", "--backend", sim, "--seed", "-1"], "primkit conformance", "--seed"),
        (["conformance", "--backend", sim, "--jobs", "two"], "primkit conformance", "--jobs"),
        (["conformance", "--backend", sim, "--jobs", "0"], "primkit conformance", "--jobs"),
        (["conformance", "--backend", sim, "--timeout", "soon"], "primkit conformance", "--timeout"),
        (["conformance", "--backend", sim, "--profile", "fast"], "primkit conformance", "--profile"),
        (["conformance", "--backend", sim, "--dtypes", "f32,f99"], "primkit conformance", "unknown dtype 'f99'"),
        (["conformance", "--backend"], "primkit conformance", "--backend"),
        (["new-backend"], "primkit new-backend", "NAME is required"),
        (["new-backend", "acme", "--bogus"], "primkit new-backend", "--bogus"),
        (["run-model", "--backend", sim], "primkit run-model", "--model is required"),
        (["run-model", "--backend", sim, "--model", "big"], "primkit run-model", "--model"),
        (["run-model", "--backend", sim, "--model", "mlp", "--seed", "abc"], "primkit run-model", "--seed"),
        (["run-model", "--backend", sim, "--model", "mlp", "--bogus"], "primkit run-model", "--bogus"),
    ]
    for args, command, word in rejected:
        rc, out, err = run([primkit] + args, env)
        shown = "primkit %s" % " ".join(args)
        check(rc == 2, "%s: exit %d, want 2 (stderr: %s)" % (shown, rc, err.strip()))
        check(err.startswith(command + ": "), "%s: the message does not start with '%s: ': %s" % (shown, command, err))
        check(word in err, "%s: the message does not mention '%s': %s" % (shown, word, err))
        check(out == "", "%s: a rejected command line printed on stdout: %s" % (shown, out))
    rc, out, err = run([primkit], env)
    check(rc == 2 and "Usage: primkit" in err and out == "", "bare primkit: exit %d, want 2 with the usage on stderr" % rc)


def check_help_and_version(primkit, root, env):
    for command in COMMANDS:
        for flag in ["--help", "-h"]:
            rc, out, err = run([primkit, command, flag], env)
            check(rc == 0, "primkit %s %s: exit %d (%s)" % (command, flag, rc, err.strip()))
            check(out.startswith("") and ("Usage: primkit %s" % command) in out,
                  "primkit %s %s does not print its usage: %s" % (command, flag, out[:200]))
    rc, out, _ = run([primkit, "--help"], env)
    check(rc == 0 and all(c in out for c in COMMANDS), "primkit --help does not list every command")
    project, abi = source_versions(root)
    rc, out, _ = run([primkit, "--version"], env)
    want = "primkit %s (PrimKit ABI %s; libprimkit speaks %s)\n" % (project, abi, abi)
    check(rc == 0 and out == want, "primkit --version printed %r (exit %d), want %r" % (out, rc, want))


def check_documents(primkit, root, sim, env):
    _, abi = source_versions(root)
    rc, out, err = run([primkit, "list", "--json"], env)
    check(rc == 0, "list --json: exit %d (%s)" % (rc, err))
    doc = json.loads(out)
    check(list(doc) == ["abi", "backends", "load_errors"], "list --json keys: %s" % list(doc))
    check(doc["abi"] == abi, "list --json abi %s, want %s" % (doc["abi"], abi))
    sims = [b for b in doc["backends"] if b["name"] == "sim"]
    check(len(sims) == 1, "list --json does not list sim once: %s" % [b["name"] for b in doc["backends"]])
    if sims:
        check(list(sims[0]) == ["name", "vendor", "version", "abi", "path", "devices"], "backend keys %s" % list(sims[0]))
        check(len(sims[0]["devices"]) == 1 and sims[0]["devices"][0]["dtypes"] == "f32",
              "sim's device: %s" % sims[0]["devices"])
        check(list(sims[0]["devices"][0]) == ["index", "name", "memory_bytes", "compute_units", "features", "dtypes"],
              "device keys %s" % list(sims[0]["devices"][0]))
    check(any("libprimkit_backend_broken.so" in e for e in doc["load_errors"]),
          "list --json does not name the broken plugin: %s" % doc["load_errors"])

    rc, out, err = run([primkit, "info", sim, "--json"], env)
    check(rc == 0, "info sim --json: exit %d (%s)" % (rc, err))
    info = json.loads(out)
    check(info["backend"] == "sim" and info["path"] == sim, "info --json names %s at %s" % (info["backend"], info["path"]))
    native = sorted((op, dt) for op, row in info["ops"].items() for dt, how in row["dtypes"].items() if how == "native")
    check(native == [("add", "f32"), ("mul", "f32")], "sim's native pairs: %s, want add and mul on f32" % native)
    prim, comp = info["tiers"]["primitive"], info["tiers"]["composite"]
    check(prim["native"] == 2 and prim["fully_supported"] == 0 and prim["partly_supported"] == 2,
          "primitive tier of sim: %s" % {k: prim[k] for k in ("native", "fully_supported", "partly_supported")})
    check(prim["by_dtype"]["f32"]["native"] == 2, "sim's f32 primitive pairs: %s" % prim["by_dtype"]["f32"])
    check(comp["native"] == 0 and comp["decomposed"] == comp["pairs"] > 0, "composite tier of sim: %s" % comp)
    ops_by_tier = {t: sum(1 for r in info["ops"].values() if r["tier"] == t) for t in ("primitive", "composite")}
    check(ops_by_tier["primitive"] == prim["ops"] and ops_by_tier["composite"] == comp["ops"],
          "the per-op rows (%s) disagree with the tier counts" % ops_by_tier)
    check(info["conformance_pairs"] == prim["pairs"] + comp["pairs"] + info["fused"]["pairs"],
          "conformance_pairs %d is not the sum of the tiers' and the fused pairs" % info["conformance_pairs"])
    # The text form counts the same pairs.
    rc, text, _ = run([primkit, "info", sim], env)
    check("2/%d (op, dtype) pairs" % prim["pairs"] in text, "info text disagrees with --json:\n%s" % text)


def main():
    primkit, root, sim = sys.argv[1:4]
    with tempfile.TemporaryDirectory(prefix="primkit-cli-") as tmp:
        env = dict(os.environ, PRIMKIT_PLUGIN_PATH=os.path.dirname(sim), PRIMKIT_CACHE_DIR=os.path.join(tmp, "cache"))
        check_usage_errors(primkit, sim, env)
        check_help_and_version(primkit, root, env)
        check_documents(primkit, root, sim, env)
    if failures:
        print("FAIL:\n  " + "\n  ".join(failures))
        return 1
    print("ok: usage errors, --help, --version, list --json, info --json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
