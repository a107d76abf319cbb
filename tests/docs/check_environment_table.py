#!/usr/bin/env python3
"""Every PRIMKIT_* name in the sources is documented in docs/environment.md.

Greps the project's sources for PRIMKIT_<NAME> and fails when a name is in neither of the document's two kinds of
entries: the tables of environment variables, or the list of PRIMKIT_* names that are not environment variables
(CMake options, compile definitions, header guards). A name the sources read or set as an environment variable
(getenv, os.environ, setenv, $NAME in a shell script, $ENV{NAME} or ENVIRONMENT in CMake) must be in the tables,
and every name in the tables must still be used somewhere.

  check_environment_table.py SOURCE_ROOT
"""
import os
import re
import sys

SCANNED = ["sdk", "backends", "conformance", "tools", "python", "tests", "bench", "templates", "cmake",
           "CMakeLists.txt", "CMakePresets.json"]
SKIPPED_DIRS = {"__pycache__", ".git", "build"}
NAME = re.compile(r"(?<![A-Za-z0-9_])PRIMKIT_[A-Z0-9_]*[A-Z0-9](?![A-Za-z0-9_])")
# How code reads or sets an environment variable, per kind of file.
ENV_USE_ANY = [r"getenv\(\s*\"(PRIMKIT_\w+)\"", r"setenv\(\s*\"(PRIMKIT_\w+)\"", r"environ(?:\.get)?[\[(]\s*[\"'](PRIMKIT_\w+)",
               r"setenv\(\s*[\"'](PRIMKIT_\w+)[\"']", r"\"(PRIMKIT_\w+)=", r"\$ENV\{(PRIMKIT_\w+)\}"]
ENV_USE_SHELL = [r"\$\{?(PRIMKIT_\w+)", r"(?:^|[\s;])(PRIMKIT_\w+)="]


def source_files(root):
    for entry in SCANNED:
        path = os.path.join(root, entry)
        if os.path.isfile(path):
            yield path
            continue
        for folder, dirs, files in os.walk(path):
            dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS and not d.startswith("build")]
            for f in files:
                yield os.path.join(folder, f)


def is_shell(path, text):
    return path.endswith(".sh") or text.startswith("#!/usr/bin/env bash") or text.startswith("#!/bin/sh")


def scan(root):
    """name -> first 'file:line' using it; and the names used as environment variables."""
    used, env_used = {}, {}
    for path in source_files(root):
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (UnicodeDecodeError, OSError):
            continue  # binary or unreadable: not a source
        rel = os.path.relpath(path, root)
        if rel == os.path.join("tests", "docs", "check_environment_table.py"):
            continue
        patterns = ENV_USE_ANY + (ENV_USE_SHELL if is_shell(path, text) else [])
        for lineno, line in enumerate(text.splitlines(), 1):
            for name in NAME.findall(line):
                used.setdefault(name, "%s:%d" % (rel, lineno))
            for pattern in patterns:
                for name in re.findall(pattern, line):
                    if NAME.fullmatch(name):
                        env_used.setdefault(name, "%s:%d" % (rel, lineno))
    return used, env_used


def documented(doc_path):
    """(names in the environment tables, names listed as not environment variables)."""
    with open(doc_path, encoding="utf-8") as f:
        text = f.read()
    marker = "## `PRIMKIT_*` names that are not environment variables"
    if marker not in text:
        sys.exit("%s: the section '%s' is missing" % (doc_path, marker))
    tables, others = text.split(marker, 1)
    table_names = set(re.findall(r"^\| `(PRIMKIT_[A-Z0-9_]+)`", tables, re.M))
    other_names = set(re.findall(r"`(PRIMKIT_[A-Z0-9_]+)`", others))
    return table_names, other_names


def main():
    root = sys.argv[1]
    table, others = documented(os.path.join(root, "docs", "environment.md"))
    used, env_used = scan(root)
    errors = []
    for name, where in sorted(used.items()):
        if name not in table and name not in others:
            errors.append("%s (%s) is not in docs/environment.md" % (name, where))
    for name, where in sorted(env_used.items()):
        if name not in table:
            errors.append("%s is used as an environment variable (%s) but is not in the tables of "
                          "docs/environment.md" % (name, where))
    for name in sorted(table | others):
        if name not in used:
            errors.append("%s is documented in docs/environment.md but no source uses it any more" % name)
    for name in sorted(table & others):
        errors.append("%s is listed both as an environment variable and as not one" % name)
    print("docs/environment.md: %d environment variables, %d other names; sources use %d names, %d as "
          "environment variables" % (len(table), len(others), len(used), len(env_used)))
    if errors:
        print("FAIL:\n  " + "\n  ".join(errors))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
