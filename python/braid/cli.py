"""`python -m braid <command>`: bench, sim, plan, topo, plot."""

import argparse
import json
import os
import subprocess
import sys

from braid import tools
from braid.sizes import parse_size


def _run(argv):
    print("+ " + " ".join(argv), flush=True)
    return subprocess.call(argv)


# What `braid bench` (and so ./run.sh) measures when given no arguments: braid as the drop-in
# runs it (NVLink + PCIe, --multipath) against NCCL alone, each row the median of 3 repetitions,
# then braid's PCIe path alone against NCCL's own host-staged path (NCCL_P2P_DISABLE=1 for NCCL),
# with the PCIe ceiling.
MULTIPATH = ["--multipath", "-b", "1M", "-e", "1G", "-f", "4", "-w", "30", "--repeat", "3"]
DEFAULT_BENCH = [
    (MULTIPATH + ["-C", "all_reduce"], {}),
    (MULTIPATH + ["-C", "all_gather"], {}),
    (MULTIPATH + ["-C", "reduce_scatter"], {}),
    (["-C", "all_reduce", "-b", "64M", "-e", "1G", "-f", "4", "--ceiling"], {"NCCL_P2P_DISABLE": "1"}),
]


def cmd_bench(args, extra):
    """braid against NCCL on this machine's GPUs (braid-bench, nccl-tests' flags)."""
    env = dict(os.environ)
    env.setdefault("NCCL_NVLS_ENABLE", "0")  # never NVLink multicast on shared hosts
    runs = [(extra, {})] if extra else DEFAULT_BENCH
    worst = 0
    for run, run_env in runs:
        argv = [tools.tool("braid-bench")] + run
        prefix = "".join(f"{k}={v} " for k, v in run_env.items())
        print("+ " + prefix + " ".join(argv), flush=True)
        worst = max(worst, subprocess.call(argv, env={**env, **run_env}))
    return worst


def cmd_sim(args, extra):
    """The simulator: generated programs through the cost model on a bundled topology."""
    argv = [tools.tool("braid-sim"), "--topo", args.topo] + extra
    return _run(argv)


def cmd_plan(args, extra):
    return _run([tools.tool("braid-plan")] + extra)


def cmd_topo(args, extra):
    return _run([tools.tool("braid-plan"), "--list-topologies"] + extra)


def cmd_plot(args, extra):
    """Plots algbw against size from braid-bench or braid-sim JSON output."""
    with open(args.json) as f:
        data = json.load(f)
    rows = data["rows"] if isinstance(data, dict) else data
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("braid plot needs matplotlib (pip install matplotlib)", file=sys.stderr)
        return 2
    series = {}
    for r in rows:
        key = (r.get("collective", "?"), r.get("path", r.get("series", "braid")))
        series.setdefault(key, []).append((r["size"], r["algbw"]))
    fig, ax = plt.subplots(figsize=(7, 4))
    for (coll, path), pts in sorted(series.items()):
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"{coll} {path}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("size (bytes)")
    ax.set_ylabel("algbw (GB/s)")
    ax.legend(fontsize=7)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(args.output, dpi=120)
    print(f"wrote {args.output}")
    return 0


def build_parser():
    p = argparse.ArgumentParser(prog="braid", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("bench", help=cmd_bench.__doc__).set_defaults(func=cmd_bench)
    s = sub.add_parser("sim", help=cmd_sim.__doc__)
    s.add_argument("--topo", default="h200x2")
    s.set_defaults(func=cmd_sim)
    sub.add_parser("plan", help="print a generated program and its predicted cost (braid-plan)").set_defaults(func=cmd_plan)
    sub.add_parser("topo", help="list bundled topologies").set_defaults(func=cmd_topo)
    pl = sub.add_parser("plot", help=cmd_plot.__doc__)
    pl.add_argument("json")
    pl.add_argument("-o", "--output", default="braid.png")
    pl.set_defaults(func=cmd_plot)
    return p


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    args, extra = build_parser().parse_known_args(argv)
    try:
        return args.func(args, extra)
    except FileNotFoundError as e:
        print(f"braid: {e}", file=sys.stderr)
        return 2


__all__ = ["main", "parse_size"]
