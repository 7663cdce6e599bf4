"""`braid <command>` (or `python -m braid`): run, doctor, bench, trace, sim, plan, topo, gpu-check, plot."""

import argparse
import json
import os
import subprocess
import sys

from braid import __version__, bench, doctor, plots, run, tools, trace
from braid.sizes import parse_size


class Parser(argparse.ArgumentParser):
    """argparse whose errors are one line that says where the usage is."""

    def error(self, message):
        self.exit(2, f"{self.prog}: {message} (`{self.prog} --help` shows the usage)\n")


def _run(argv):
    print("+ " + " ".join(argv), flush=True)
    return subprocess.call(argv)


def without_separator(extra):
    """The arguments for a tool, without the first `--` (which only ended braid's own options)."""
    extra = list(extra)
    if "--" in extra:
        extra.remove("--")
    return extra


def cmd_sim(args, extra):
    """the simulator, braid-sim: generated programs through the cost model on a bundled topology
    (arguments and --help go to braid-sim)"""
    return _run([tools.tool("braid-sim")] + without_separator(extra))


def cmd_plan(args, extra):
    """print a generated program and its predicted cost, braid-plan (arguments and --help go to it)"""
    return _run([tools.tool("braid-plan")] + without_separator(extra))


def cmd_topo(args, extra):
    return _run([tools.tool("braid-plan"), "--list-topologies"] + extra)


def cmd_plot(args, extra):
    """Plots algbw against size from a braid bench results.json (or one braid-bench/braid-sim JSON)."""
    if not os.path.isfile(args.json):
        print(f"braid plot: no file {args.json}: give the results.json that braid bench wrote", file=sys.stderr)
        return 2
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
    p = Parser(prog="braid", description=__doc__)
    p.add_argument("--version", action="version", version=f"braid {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    run.add_parser(sub)
    doctor.add_parser(sub)
    bench.add_parser(sub)
    trace.add_parser(sub)
    # Pass-through commands: everything after the command name, --help included, is the tool's.
    sub.add_parser("sim", help=cmd_sim.__doc__, add_help=False).set_defaults(func=cmd_sim)
    sub.add_parser("plan", help=cmd_plan.__doc__, add_help=False).set_defaults(func=cmd_plan)
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
        # A tool not built says where it looked; a file given that is not there names the file.
        what = f"no file {e.filename}: check the path" if e.filename else str(e)
        print(f"braid {args.command}: {what}", file=sys.stderr)
        return 2


__all__ = ["main", "parse_size"]
