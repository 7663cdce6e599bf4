"""`braid bench`, the main job: braid against NCCL on this machine's GPUs (braid-bench), or without
a GPU the simulator's predictions (braid-sim). Shows progress row by row, writes the results as
JSON and a PNG of algbw against size, and with --check compares braid/NCCL ratios with a baseline.
"""

import argparse
import dataclasses
import datetime
import json
import os
import subprocess
import sys
import time
from typing import List, Optional

from braid import plots, predictions, ratios, tools
from braid.nccl import find_real_nccl, library_dir_env
from braid.sizes import parse_size


@dataclasses.dataclass
class Run:
    """One invocation of a tool: its label (the series' name), arguments and extra environment."""
    label: str
    argv: List[str]
    env: dict = dataclasses.field(default_factory=dict)


# The default GPU job: braid as the drop-in runs it (NVLink + PCIe, --multipath) against NCCL
# alone, each row the median of 3 repetitions; then braid's PCIe path alone against NCCL's own
# host-staged path (NCCL_P2P_DISABLE=1 for NCCL), with the PCIe ceiling.
MULTIPATH = ["--multipath", "-b", "1M", "-e", "1G", "-f", "4", "-w", "30", "--repeat", "3"]
GPU_RUNS = [
    Run("multipath", MULTIPATH + ["-C", "all_reduce"]),
    Run("multipath", MULTIPATH + ["-C", "all_gather"]),
    Run("multipath", MULTIPATH + ["-C", "reduce_scatter"]),
    Run("pcie", ["-C", "all_reduce", "-b", "64M", "-e", "1G", "-f", "4", "--ceiling"], {"NCCL_P2P_DISABLE": "1"}),
]
# --quick: the same shapes at fewer sizes and repetitions (a smoke run, not a measurement to keep).
QUICK_GPU_RUNS = [
    Run("multipath", ["--multipath", "-b", "16M", "-e", "256M", "-f", "4", "-w", "5", "-n", "10", "-C", c])
    for c in ("all_reduce", "all_gather", "reduce_scatter")
]
SIM_ARGS = ["-b", "1M", "-e", "1G", "-f", "4"]
QUICK_SIM_ARGS = ["-b", "1M", "-e", "64M", "-f", "8"]
SIZE_FLAGS = (("-b", "--minbytes"), ("-e", "--maxbytes"), ("-f", "--stepfactor"))


PASS_THROUGH_HELP = f"""\
tool arguments:
  Arguments braid bench does not know go to the tool it runs: braid-sim without a GPU (or with
  --sim; `braid sim --help` lists its flags), braid-bench with GPUs, where they replace the default
  runs with one run as asked. Sizes not given keep their defaults ({' '.join(SIM_ARGS)}; with --quick
  {' '.join(QUICK_SIM_ARGS)} in the simulator), so `braid bench -b 4M` still runs up to 1G.
  Examples: braid bench -C all_reduce   braid bench --sim -- -b 4M -e 64M
"""


def _flag(argv, names, default):
    for i, a in enumerate(argv):
        if a in names and i + 1 < len(argv):
            return argv[i + 1]
        for n in names:
            if n.startswith("--") and a.startswith(n + "="):
                return a.split("=", 1)[1]
    return default


def _given(argv, names) -> bool:
    return any(a in names or any(n.startswith("--") and a.startswith(n + "=") for n in names) for a in argv)


def with_default_sizes(extra, sizes):
    """The tool's arguments: the user's, after each size flag of `sizes` (-b/-e/-f and its value)
    the user did not give; a step in bytes (-i) given replaces the factor."""
    extra = list(extra)
    if "--" in extra:
        extra.remove("--")  # it only ended braid bench's own options
    step_bytes = _given(extra, ("-i", "--stepbytes"))
    defaults = []
    for names in SIZE_FLAGS:
        if names[0] in sizes and not _given(extra, names) and not (names[0] == "-f" and step_bytes):
            i = sizes.index(names[0])
            defaults += sizes[i:i + 2]
    return defaults + extra


def expected_rows(argv, tool_defaults) -> Optional[int]:
    """Rows a braid-bench/braid-sim invocation prints (sizes x collectives), for the progress count;
    None when its flags ask for more than sizes (all dtypes or ops)."""
    if _flag(argv, ("-d", "--datatype"), "") == "all" or _flag(argv, ("-o", "--op"), "") == "all":
        return None
    try:
        lo = parse_size(_flag(argv, ("-b", "--minbytes"), tool_defaults["b"]))
        hi = parse_size(_flag(argv, ("-e", "--maxbytes"), tool_defaults["e"]))
        factor = float(_flag(argv, ("-f", "--stepfactor"), tool_defaults["f"]))
    except ValueError:
        return None
    if factor <= 1:
        step = parse_size(_flag(argv, ("-i", "--stepbytes"), "1M"))
        return (hi - lo) // step + 1 if step > 0 else None
    sizes, s = 0, lo
    while s <= hi:
        sizes += 1
        s = int(s * factor)
        if s == 0:
            break
    collectives = tool_defaults.get("collectives", 1)
    if any(a in ("-C", "--collective") for a in argv):
        i = max(i for i, a in enumerate(argv) if a in ("-C", "--collective"))
        collectives = 0
        for a in argv[i + 1:]:
            if a.startswith("-"):
                break
            collectives += 1
        collectives = max(collectives, 1)
    return sizes * collectives


def _is_row(line: str) -> bool:
    return bool(line.strip()) and not line.lstrip().startswith("#") and line.split()[0].isdigit()


def run_with_progress(argv, env, index, total, expected, progress_after=2.0) -> int:
    """Runs a tool, its output passed through as it comes, and once the run has lasted
    `progress_after` seconds a progress line on stderr per row (rows done, of how many, time)."""
    print("+ " + "".join(f"{k}={v} " for k, v in env.items() if k not in os.environ or os.environ[k] != v)
          + " ".join(argv), flush=True)
    start = time.monotonic()
    rows = 0
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=env, bufsize=1)
    assert proc.stdout is not None
    for line in proc.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        if _is_row(line):
            rows += 1
            elapsed = time.monotonic() - start
            if elapsed >= progress_after:
                of = f"/{expected}" if expected else ""
                print(f"braid bench: run {index}/{total}: {rows}{of} rows, {elapsed:.0f} s",
                      file=sys.stderr, flush=True)
    return proc.wait()


def gpu_count() -> int:
    try:
        probe = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in probe.stdout.splitlines() if line.startswith("GPU")) if probe.returncode == 0 else 0


def default_out_dir() -> str:
    return "braid-bench-" + datetime.datetime.now().strftime("%Y%m%d-%H%M%S")


def main(args, extra) -> int:
    out_dir = os.path.abspath(args.out or default_out_dir())
    made_out_dir = not os.path.isdir(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    gpus = 0 if args.sim else gpu_count()
    # braid against NCCL needs 2 GPUs (one process drives them all); braid-bench's own flags
    # given explicitly run as asked.
    use_gpu = gpus >= 2 or (gpus == 1 and bool(extra))
    why_sim = "--sim" if args.sim else ("one GPU (braid against NCCL needs 2; bench/rig/ checks the drop-in on one)"
                                        if gpus == 1 else "no GPU here")
    if use_gpu:
        try:
            bench = tools.tool("braid-bench")
        except FileNotFoundError as e:
            print(f"braid bench: a GPU is here but {e}", file=sys.stderr)
            return 2
        runs = [Run("custom", with_default_sizes(extra, SIM_ARGS))] if extra else \
            (QUICK_GPU_RUNS if args.quick else GPU_RUNS)
        env = library_dir_env(find_real_nccl())
        env.setdefault("NCCL_NVLS_ENABLE", "0")  # never NVLink multicast on shared hosts
        defaults = {"b": "32M", "e": "32M", "f": "1"}
        tool = bench
    elif predictions.covers(args.topo) and not extra:
        # braid against NCCL on 2, 4 and 8 H200s, from the model calibrated to the measurements.
        print(predictions.banner(why_sim), flush=True)
        tool = tools.tool("braid-sim")
        runs = [Run(argv[2], argv) for argv in predictions.run_args(args.quick)]
        env = dict(os.environ)
        defaults = predictions.DEFAULTS
    else:
        print(f"braid bench: {why_sim} - the simulator's predictions on the bundled topology {args.topo} "
              "(braid's PCIe programs through the cost model beside a host-staged ring; not measured)",
              flush=True)
        tool = tools.tool("braid-sim")
        sizes = QUICK_SIM_ARGS if args.quick else SIM_ARGS
        runs = [Run("predicted", ["--topo", args.topo] + with_default_sizes(extra, sizes))]
        env = dict(os.environ)
        defaults = {"b": "1M", "e": "1G", "f": "4", "collectives": 6}
    parts = []
    worst = 0
    for i, run in enumerate(runs, 1):
        part = os.path.join(out_dir, f"run{i}.json")
        argv = [tool] + run.argv + ["-J", part]
        code = run_with_progress(argv, {**env, **run.env}, i, len(runs), expected_rows(run.argv, defaults))
        if code != 0:
            return tool_failed(os.path.basename(tool), code, out_dir if made_out_dir else None)
        if os.path.exists(part):
            with open(part) as f:
                parts.append({"label": run.label, "env": run.env, "result": json.load(f)})
    results = {"tool": os.path.basename(tool), "predicted": not use_gpu,
               "topology": args.topo if not use_gpu else "this machine", "runs": parts}
    results["ratios"] = ratios.ratio_table(results)
    results_path = os.path.join(out_dir, "results.json")
    with open(results_path, "w") as f:
        json.dump(results, f, indent=1)
    print(f"braid bench: results in {results_path}")
    for line in ratios.summary_lines(results["ratios"], predicted=not use_gpu):
        print(line)
    for line in predictions.summary_lines([p for p in parts if p["result"].get("tool") == "braid-sim versus-nccl"]):
        print(line)
    try:
        png = plots.plot_algbw(results, os.path.join(out_dir, "algbw.png"))
        print(f"braid bench: plot in {png}")
    except ImportError as e:
        print(f"braid bench: no plot ({e}; pip install matplotlib)", file=sys.stderr)
    if args.check:
        with open(args.check) as f:
            baseline = json.load(f)
        verdict = ratios.check(baseline, results, args.tolerance)
        print(verdict.text())
        if not verdict.ok:
            worst = max(worst, 1)
    return worst


def tool_failed(name, code, made_out_dir) -> int:
    """Stops braid bench where its tool failed: one line, no results, the folder made for them gone
    when nothing is in it."""
    print(f"braid bench: {name} failed (exit {code}), no results written; its message is above "
          f"(`braid bench --help` and `{name} --help` list the flags)", file=sys.stderr)
    if made_out_dir and not os.listdir(made_out_dir):
        os.rmdir(made_out_dir)
    return code if code > 0 else 1


def add_parser(sub):
    p = sub.add_parser("bench", help="the main job: braid against NCCL (or the simulator without a GPU); "
                                     "JSON, a PNG, and --check against a baseline",
                       usage="braid bench [options] [--] [TOOL ARGUMENTS...]",
                       description=__doc__, epilog=PASS_THROUGH_HELP,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", help="folder for results.json, algbw.png and each run's JSON "
                                 "(default: braid-bench-DATE-TIME in the current folder)")
    p.add_argument("--check", metavar="BASELINE.json",
                   help="fail (exit 1) where a braid/NCCL ratio fell below the baseline's by more than --tolerance")
    p.add_argument("--tolerance", type=float, default=0.05, help="relative drop allowed by --check (default 0.05)")
    p.add_argument("--sim", action="store_true", help="run the simulator even where a GPU is")
    p.add_argument("--topo", default=os.environ.get("BRAID_SIM_TOPO", "h200x2"),
                   help="the simulator's bundled topology (braid topo lists them)")
    p.add_argument("--quick", action="store_true", help="fewer sizes and repetitions (a smoke run)")
    p.set_defaults(func=main)
    return p
