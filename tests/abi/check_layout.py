#!/usr/bin/env python3
"""Compares the ABI layout a build prints (abi_layout_dump) with every released layout file.

A released field must keep its offset and size; a released struct may only grow (fields are appended).
Entries that are new since the last release are listed, not failed: they become frozen when the next
release's layout file is written (tools/freeze-abi)."""
import subprocess
import sys


def parse(lines):
    out = {}
    for ln in lines:
        parts = ln.split()
        if len(parts) >= 3:
            out[parts[0]] = parts[1:]
    return out


def main():
    dump, frozen_files = sys.argv[1], sys.argv[2:]
    current = parse(subprocess.run([dump], check=True, capture_output=True, text=True).stdout.splitlines())
    errors, frozen_keys = [], set()
    for path in frozen_files:
        with open(path, encoding="utf-8") as f:
            frozen = parse(ln for ln in f if not ln.startswith("#"))
        for key, val in frozen.items():
            frozen_keys.add(key)
            cur = current.get(key)
            if cur is None:
                errors.append("%s: %s was released but is gone" % (path, key))
            elif val[0] == "size" and "." not in key:
                if int(cur[1]) < int(val[1]):
                    errors.append("%s: struct %s shrank from %s to %s bytes" % (path, key, val[1], cur[1]))
            elif cur != val:
                errors.append("%s: %s changed from '%s' to '%s'" % (path, key, " ".join(val), " ".join(cur)))
    # Fields new since the last release must come after every released field of their struct.
    for key, cur in current.items():
        if "." in key and key not in frozen_keys:
            struct = key.split(".")[0]
            released = [int(current[k][1]) for k in frozen_keys if k.startswith(struct + ".") and k in current]
            if released and int(cur[1]) < max(released):
                errors.append("%s is new but placed before released fields of %s" % (key, struct))
    new = [k for k in current if k not in frozen_keys]
    print("ABI layout: %d released entries checked, %d new entries" % (len(frozen_keys), len(new)))
    if errors:
        print("ABI BREAK:\n  " + "\n  ".join(errors))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
