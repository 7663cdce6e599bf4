#!/usr/bin/env python3
"""Compares bench/train/train.py runs: plain NCCL (A) against braid's drop-in (B).

    compare.py A.json B.json [A2.json B2.json ...] [--label NAME] [--rtol R] [--atol A]

Arguments alternate A, B, A, B (the order bench/train/run.sh runs them in). A file that is missing
or unreadable counts as a failed run.

Losses: every run's per-step losses are compared, step by step, with the first readable A run's.
A step passes when |ref - x| <= atol + rtol * |ref|; the maximum absolute and relative differences
are reported either way. braid may differ from NCCL only by the summation order inside the
collectives. With 2 ranks there is no order to change (a + b == b + a; DDP's and FSDP's division
by 2 is exact), so the default at 2 ranks in float32 is exact equality (rtol = atol = 0), and the
parameter checksums must then be equal too. From 3 ranks up the default is rtol 1e-4, atol 1e-6
(fp32 reassociation is ~1e-7 relative per step; a wrong reduction moves the next loss by far
more); bfloat16 gets rtol 1e-2. --rtol/--atol override the defaults. The runs must also agree on
their configuration, and in each run all ranks must end with the same parameters.

Step time: the timed steps (after warmup) of all A runs are pooled and their median taken, the same
for B; the ratio is median(A) / median(B), so > 1 means braid is faster. Each run's own median is
shown in brackets (min-max). The summary calls braid faster or slower only where the ratio is
further from 1 than plain's own runs are apart ((max - min) / median of their medians); closer,
the runs cannot tell, and it says so.

Prints the details, a markdown table (a header and one row; --row-only for the row alone) and a
final 'SUMMARY' line. Exit status 0 when the losses agree within the tolerance and no check failed,
1 otherwise. The speed does not decide the exit status.
"""
import argparse
import json
import math
import os
import statistics
import sys

HEADER = ("| case | model | ranks | grad MiB | steps | losses | max abs diff | max rel diff "
          "| plain ms | braid ms | plain/braid | runs |")
RULE = "|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---|"


def load(path):
    try:
        with open(path) as f:
            return json.load(f), None
    except FileNotFoundError:
        return None, f"{os.path.basename(path)}: no result written (the run failed or timed out)"
    except (OSError, ValueError) as e:
        return None, f"{path}: {e.__class__.__name__}: {e}"


def default_tolerance(world_size, dtype):
    """(rtol, atol): exact at 2 ranks in float32, else loose enough for reassociation."""
    if dtype == "bfloat16":
        return 1e-2, 1e-6
    if world_size == 2:
        return 0.0, 0.0
    return 1e-4, 1e-6


def loss_diffs(ref, other, rtol, atol):
    """Step-by-step comparison of two loss lists: (max abs diff, max rel diff, problems)."""
    problems = []
    if len(ref) != len(other):
        problems.append(f"step counts differ: {len(ref)} vs {len(other)}")
    max_abs = max_rel = 0.0
    bad = []
    for step, (a, b) in enumerate(zip(ref, other)):
        a, b = float(a), float(b)
        if not (math.isfinite(a) and math.isfinite(b)):
            bad.append(step)
            max_abs = max_rel = math.inf
            continue
        diff = abs(a - b)
        rel = diff / abs(a) if a != 0 else (0.0 if diff == 0 else math.inf)
        max_abs, max_rel = max(max_abs, diff), max(max_rel, rel)
        if diff > atol + rtol * abs(a):
            bad.append(step)
    if bad:
        problems.append(f"{len(bad)} of {min(len(ref), len(other))} steps outside "
                        f"|a-b| <= {atol:g} + {rtol:g}*|a| (first: step {bad[0]})")
    return max_abs, max_rel, problems


def timed_steps(run):
    return [float(t) for t in run.get("step_times_s", [])[run.get("warmup", 0):]]


def preload_took_effect(run):
    """True/False where the run says which libraries it had mapped, None where it cannot tell."""
    libs = run.get("loaded_libraries")
    preload = run.get("ld_preload", "")
    if libs is None or not preload:
        return None
    wanted = {os.path.basename(p) for p in preload.replace(":", " ").split()}
    return any(os.path.basename(p) in wanted for p in libs)


def ms(seconds):
    return f"{seconds * 1e3:.2f}" if seconds is not None else "-"


def plain_spread(run_medians):
    """How far plain NCCL's own runs land apart: (max - min) / median of their medians; None from
    fewer than two runs. A plain/braid ratio closer to 1 than this says nothing about braid."""
    if len(run_medians) < 2:
        return None
    return (max(run_medians) - min(run_medians)) / statistics.median(run_medians)


def speed_verdict(ratio, noise):
    """'braid faster' / 'braid slower' only beyond plain's own spread between runs."""
    if noise is not None and abs(ratio - 1) <= noise:
        return f"within plain's own spread of {noise * 100:.0f}% between runs: undecided"
    if noise is None and ratio != 1:
        return ("braid faster" if ratio > 1 else "braid slower") + ", one plain run: spread unknown"
    return "braid faster" if ratio > 1 else ("braid slower" if ratio < 1 else "same")


def compare(paths, rtol=None, atol=None, label=""):
    """Returns a dict: ok, problems, notes, row (markdown), summary (one line), and the numbers."""
    problems, notes = [], []
    runs = []  # (side, path, data)
    for i, path in enumerate(paths):
        side = "A" if i % 2 == 0 else "B"
        data, err = load(path)
        if err:
            problems.append(f"run {side}{i // 2 + 1} {err}")
        runs.append((side, path, data))
    good = [(s, p, d) for s, p, d in runs if d is not None]
    a_runs = [(p, d) for s, p, d in good if s == "A"]
    b_runs = [(p, d) for s, p, d in good if s == "B"]
    if not a_runs:
        problems.append("no plain (A) run to compare with")
    if not b_runs:
        problems.append("no braid (B) run to compare")

    result = {"label": label, "problems": problems, "notes": notes, "max_abs": None, "max_rel": None,
              "a_median_s": None, "b_median_s": None, "ratio": None, "bitwise_equal": False}
    ref_path, ref = a_runs[0] if a_runs else (good[0][1:] if good else (None, None))
    if ref is not None:
        world, dtype = ref.get("world_size"), ref.get("config", {}).get("dtype", "float32")
        d_rtol, d_atol = default_tolerance(world, dtype)
        rtol = d_rtol if rtol is None else rtol
        atol = d_atol if atol is None else atol
        exact = rtol == 0 and atol == 0
        result.update(rtol=rtol, atol=atol, model=ref.get("model"), world_size=world,
                      grad_mib=ref.get("grad_mib"), steps=ref.get("steps"))
        max_abs = max_rel = 0.0
        bitwise = True
        for side, path, run in good:
            if run is ref:
                continue
            name = f"{side} {path}"
            for key in ("model", "world_size", "params", "config"):
                if run.get(key) != ref.get(key):
                    problems.append(f"{name}: {key} differs from {ref_path}: "
                                    f"{run.get(key)!r} vs {ref.get(key)!r}")
            d_abs, d_rel, probs = loss_diffs(ref.get("losses", []), run.get("losses", []), rtol, atol)
            problems.extend(f"{name}: losses: {p}" for p in probs)
            max_abs, max_rel = max(max_abs, d_abs), max(max_rel, d_rel)
            bitwise = bitwise and run.get("losses") == ref.get("losses")
            a, b = ref.get("param_checksum"), run.get("param_checksum")
            if a is not None and b is not None and a != b:
                msg = f"{name}: param_checksum {b!r} differs from {a!r} by {abs(a - b):.3e}"
                (problems if exact else notes).append(msg)
            if side == "A" and run.get("losses") != ref.get("losses"):
                notes.append(f"{name}: two plain runs differ: the run is not deterministic, "
                             "so braid's differences may not be braid's")
        result.update(max_abs=max_abs, max_rel=max_rel, bitwise_equal=bitwise and len(good) > 1)
    for side, path, run in good:
        if run.get("ranks_agree") is False:
            problems.append(f"{side} {path}: ranks ended with different parameters (checksum min "
                            f"{run.get('param_checksum_min')!r} max {run.get('param_checksum_max')!r})")
        took = preload_took_effect(run)
        if side == "B" and not run.get("ld_preload"):
            notes.append(f"B {path}: no LD_PRELOAD: this compares two plain-NCCL runs")
        if side == "B" and took is False:
            problems.append(f"B {path}: LD_PRELOAD={run.get('ld_preload')!r} but no such library was "
                            f"mapped (mapped: {run.get('loaded_libraries')})")
        if side == "A" and run.get("ld_preload"):
            notes.append(f"A {path}: the plain run has LD_PRELOAD={run.get('ld_preload')!r}")

    a_times = [t for _, d in a_runs for t in timed_steps(d)]
    b_times = [t for _, d in b_runs for t in timed_steps(d)]
    if a_times and b_times:
        result["a_median_s"] = statistics.median(a_times)
        result["b_median_s"] = statistics.median(b_times)
        result["ratio"] = result["a_median_s"] / result["b_median_s"]
    result["a_run_medians_s"] = [statistics.median(timed_steps(d)) for _, d in a_runs if timed_steps(d)]
    result["b_run_medians_s"] = [statistics.median(timed_steps(d)) for _, d in b_runs if timed_steps(d)]
    result["noise"] = plain_spread(result["a_run_medians_s"])
    result["ok"] = not problems

    def spread(values):
        return f" ({ms(min(values))}-{ms(max(values))})" if len(values) > 1 else ""

    if not result["ok"]:
        verdict = "**FAIL**"
    elif result["bitwise_equal"]:
        verdict = "equal"
    else:
        verdict = f"within rtol {result.get('rtol', 0):g}"
    fmt = lambda v: "-" if v is None else f"{v:.3g}"  # noqa: E731
    ratio = "-" if result["ratio"] is None else f"{result['ratio']:.3f}"
    grad = result.get("grad_mib")
    result["row"] = (f"| {label or result.get('model') or '?'} | {result.get('model') or '-'} "
                     f"| {result.get('world_size') or '-'} | {'-' if grad is None else f'{grad:.1f}'} "
                     f"| {result.get('steps') or '-'} | {verdict} | {fmt(result['max_abs'])} "
                     f"| {fmt(result['max_rel'])} "
                     f"| {ms(result['a_median_s'])}{spread(result['a_run_medians_s'])} "
                     f"| {ms(result['b_median_s'])}{spread(result['b_run_medians_s'])} "
                     f"| {ratio} | {len(a_runs)}+{len(b_runs)} of {len(paths)} |")
    how = ("losses bitwise equal" if result["bitwise_equal"] else
           f"losses within rtol={result.get('rtol', 0):g} atol={result.get('atol', 0):g}")
    speed = ""
    if result["ratio"] is not None:
        faster = speed_verdict(result["ratio"], result["noise"])
        speed = (f"; step plain {ms(result['a_median_s'])} ms, braid {ms(result['b_median_s'])} ms, "
                 f"plain/braid {result['ratio']:.3f} ({faster})")
    result["summary"] = (f"SUMMARY {label or result.get('model') or '?'}: "
                         f"{'PASS ' + how if result['ok'] else f'FAIL ({len(problems)} problems) ' + problems[0]}"
                         f" [{len(a_runs)} plain + {len(b_runs)} braid runs]{speed}")
    return result


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", metavar="JSON", help="A.json B.json [A2.json B2.json ...]")
    p.add_argument("--rtol", type=float, help="default: 0 at 2 ranks in float32, 1e-4 above, 1e-2 for bfloat16")
    p.add_argument("--atol", type=float, help="default: 0 at 2 ranks in float32, else 1e-6")
    p.add_argument("--label", default="", help="the case's name in the table (default: the model)")
    p.add_argument("--row-only", action="store_true", help="print only the table row and the summary")
    p.add_argument("--json", help="also write the comparison's numbers here")
    args = p.parse_args(argv)
    if len(args.runs) < 2:
        p.error("need at least A.json and B.json")
    if len(args.runs) % 2:
        print(f"note: odd number of runs ({len(args.runs)}): the last one is an A (plain) run")

    r = compare(args.runs, args.rtol, args.atol, args.label)
    if not args.row_only:
        for i, path in enumerate(args.runs):
            data, _ = load(path)
            if data:
                side = "A plain" if i % 2 == 0 else "B braid"
                print(f"{side}: {path}: model={data.get('model')} world_size={data.get('world_size')} "
                      f"steps={data.get('steps')} median {ms(data.get('median_step_time_s'))} ms "
                      f"ranks_agree={data.get('ranks_agree')} torch={data.get('torch')} "
                      f"nccl={data.get('nccl')} LD_PRELOAD={data.get('ld_preload', '')!r}")
        if r.get("rtol") is not None:
            print(f"tolerance: |a-b| <= {r['atol']:g} + {r['rtol']:g}*|a| per step; "
                  f"max abs diff {r['max_abs']!r}, max rel diff {r['max_rel']!r}")
        for n in r["notes"]:
            print(f"note: {n}")
        for problem in r["problems"]:
            print(f"FAIL: {problem}")
        print(HEADER)
        print(RULE)
    print(r["row"])
    print(r["summary"])
    if args.json:
        with open(args.json, "w") as f:
            json.dump({k: v for k, v in r.items()}, f, indent=1)
    return 0 if r["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
