#!/usr/bin/env python3
"""Summarizes Google Benchmark JSON files as one Markdown table: for each benchmark, the median of its repetitions'
counters (the paired ratio first). Benchmarks without repetitions are listed with their single run's counters."""
import json
import sys

PREFERRED = ["ratio", "subject_GBps", "yardstick_GBps", "subject_GFLOPs", "ns_per_launch"]
# Rate counters are stored per second: FLOP/s shown as GFLOP/s; an inverted rate (seconds per launch) as ns.
SCALE = {"subject_GFLOPs": 1e-9, "ns_per_launch": 1e9}


def rows(path):
    with open(path) as f:
        data = json.load(f)
    seen = set()
    for b in data.get("benchmarks", []):
        run = b.get("run_name", b["name"])
        has_aggregates = b.get("run_type") == "aggregate"
        if has_aggregates and b.get("aggregate_name") != "median":
            continue
        if not has_aggregates and run in seen:
            continue
        seen.add(run)
        counters = {k: v for k, v in b.items() if isinstance(v, (int, float)) and k not in (
            "iterations", "real_time", "cpu_time", "repetitions", "repetition_index", "threads",
            "family_index", "per_family_instance_index")}
        yield run, b.get("real_time"), b.get("time_unit", ""), counters


def fmt(v):
    return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"


def main(paths):
    print("| benchmark | time | " + " | ".join(PREFERRED) + " |")
    print("|---|---|" + "---|" * len(PREFERRED))
    for path in paths:
        for run, t, unit, c in rows(path):
            cells = [fmt(c[k] * SCALE.get(k, 1)) if k in c else "" for k in PREFERRED]
            time = f"{fmt(t)} {unit}" if t is not None else ""
            print(f"| {run} | {time} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
