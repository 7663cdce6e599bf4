#!/usr/bin/env python3
"""Compares bench/moe/moe.py runs: plain NCCL (A) against braid's drop-in (B), alternating.

    python3 bench/moe/compare.py A1.json B1.json [A2.json B2.json ...]

Fails (exit 1) when any run received a wrong value or checked nothing, when the configurations
differ, or when a B run's LD_PRELOAD library was not mapped. Prints per skew the pooled medians
of dispatch + combine (ms) and plain/braid (> 1: braid faster); the speed never decides the exit
status.
"""
import json
import os
import statistics
import sys


def main(paths):
    if len(paths) < 2 or len(paths) % 2:
        print(__doc__)
        return 2
    runs = [json.load(open(p)) for p in paths]
    failures = []
    for path, run in zip(paths, runs):
        for row in run["results"]:
            if row["wrong"] or not row["checked"]:
                failures.append(f"{path}: skew {row['skew']}: {row['wrong']} wrong of {row['checked']}")
        if run["config"] != runs[0]["config"] or run["world_size"] != runs[0]["world_size"]:
            failures.append(f"{path}: configuration differs from {paths[0]}")
    for path, run in zip(paths[1::2], runs[1::2]):
        lib = os.path.basename(run["ld_preload"])
        if not lib or not any(os.path.basename(x) == lib for x in run["libraries"]):
            failures.append(f"{path}: LD_PRELOAD={run['ld_preload']!r} not mapped ({run['libraries']})")
    warmup = runs[0]["config"]["warmup"]
    print(f"| skew | plain ms (dispatch+combine) | braid ms | plain/braid | world {runs[0]['world_size']} |")
    print("|---|---|---|---|---|")
    for i, row in enumerate(runs[0]["results"]):
        def pooled(side):
            return [a + b for run in side for a, b in zip(run["results"][i]["dispatch_ms_all"][warmup:],
                                                          run["results"][i]["combine_ms_all"][warmup:])]
        plain, braid = statistics.median(pooled(runs[0::2])), statistics.median(pooled(runs[1::2]))
        print(f"| {row['skew']} | {plain:.3f} | {braid:.3f} | {plain / braid:.3f} | |")
    for f in failures:
        print("FAIL", f)
    print(f"SUMMARY moe: {len(runs)} runs, {'FAIL' if failures else 'all values exact'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
