"""`braid <command>` (or `python -m braid`): run, doctor, bench, trace, sim, plan, topo, gpu-check, plot."""

import argparse
import json
import subprocess
import sys

from braid import bench, doctor, plots, run, tools, trace
from braid.sizes import parse_size


def _run(argv):
    print("+ " + " ".join(argv), flush=True)
    return subprocess.call(argv)


def cmd_sim(args, extra):
    """The simulator: generated programs through the cost model on a bundled topology."""
    argv = [tools.tool("braid-sim"), "--topo", args.topo] + extra
    return _run(argv)


def cmd_plan(args, extra):
    return _run([tools.tool("braid-plan")] + extra)


def cmd_topo(args, extra):
    return _run([tools.tool("braid-plan"), "--list-topologies"] + extra)


def cmd_plot(args, extra):
    """Plots algbw against size from a braid bench results.json (or one braid-bench/braid-sim JSON)."""
    with open(args.json) as f:
        data = json.load(f)
    if "runs" not in data:  # one tool's JSON: wrap it as braid bench would
        data = {"predicted": bool(data.get("predicted")), "topology": data.get("topology"),
                "runs": [{"label": data.get("tool", "run"), "env": {}, "result": data}]}
    try:
        print(f"wrote {plots.plot_algbw(data, args.output)}")
    except ImportError:
        print("braid plot needs matplotlib (pip install matplotlib)", file=sys.stderr)
        return 2
    return 0


def cmd_gpu_check(args, extra):
    """The one GPU check (bench/gpu_check.sh): every GPU test, the main job, the rig, training."""
    script = tools.CHECKOUT / "bench" / "gpu_check.sh"
    if not script.is_file():
        print("braid gpu-check runs bench/gpu_check.sh of a source checkout (with gpubundle/ and .rig/); "
              "this braid is an installed package", file=sys.stderr)
        return 2
    return _run(["bash", str(script)] + extra)


def build_parser():
    p = argparse.ArgumentParser(prog="braid", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    run.add_parser(sub)
    doctor.add_parser(sub)
    bench.add_parser(sub)
    trace.add_parser(sub)
    s = sub.add_parser("sim", help=cmd_sim.__doc__)
    s.add_argument("--topo", default="h200x2")
    s.set_defaults(func=cmd_sim)
    sub.add_parser("plan", help="print a generated program and its predicted cost (braid-plan)").set_defaults(func=cmd_plan)
    sub.add_parser("topo", help="list bundled topologies").set_defaults(func=cmd_topo)
    sub.add_parser("gpu-check", help=cmd_gpu_check.__doc__).set_defaults(func=cmd_gpu_check)
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
