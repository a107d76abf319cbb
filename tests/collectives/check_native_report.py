#!/usr/bin/env python3
"""Checks a conformance report of the collectives stage on a backend with native collectives: every row that ran a
collective says implementation "native" (none "direct" or "staged"), and there is at least one such row."""
import json
import sys


def rows(node):
    if isinstance(node, dict):
        if "implementation" in node:
            yield node
        for value in node.values():
            yield from rows(value)
    elif isinstance(node, list):
        for value in node:
            yield from rows(value)


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        report = json.load(f)
    ran = [r for r in rows(report) if r.get("implementation")]
    other = [r for r in ran if r["implementation"] != "native"]
    if not ran:
        print("no row of the report names an implementation")
        return 1
    if other:
        for r in other[:10]:
            print("row %s %s: implementation %s, expected native" % (r.get("op"), r.get("dtype"), r["implementation"]))
        return 1
    print("%d rows, every one native" % len(ran))
    return 0


if __name__ == "__main__":
    sys.exit(main())
