#!/usr/bin/env python3
"""Compares the per-step losses of two train_ddp.py runs (plain NCCL vs braid's drop-in).

    compare_losses.py BASE.json BRAID.json [--rtol 1e-4] [--atol 1e-6]

Prints a table (step, base, braid, abs diff, rel diff) and a verdict. Exit status 0 when the step
counts match and every step satisfies |a - b| <= atol + rtol * |a| (a = base), else 1.

Why these tolerances: braid splits each large allreduce between NCCL (over NVLink) and its own
PCIe path. Each element is reduced by exactly one of the two paths, so the result holds the same
values summed in a different order: bitwise identical across ranks, but not bitwise equal to what
NCCL alone gives. In fp32 that reassociation error is about 1e-7 relative per step, and it grows
only slowly through 30 steps of SGD with momentum, so rtol = 1e-4 is a loose bound on honest
rounding differences. It still catches any wrong-data bug: a wrong allreduce (a missing, doubled,
stale or misplaced chunk) changes the loss of the very next step by far more than 1e-4.
(losses[0] comes before any gradient allreduce, so it checks only the initial weights; losses[1]
is the first step that sees an allreduced gradient.) atol = 1e-6 only matters for losses near 0.
With exactly 2 ranks there is no order to change (a + b == b + a exactly, and DDP's division by
the world size is exact), so a correct split gives bitwise equal losses; the tolerance matters from
3 ranks up, and the script prints a note when 2-rank losses differ at all.
bfloat16 runs (train_ddp.py --dtype bfloat16) round every sum to 8 bits of mantissa and need a
much looser rtol (about 1e-2).
"""
import argparse
import json
import math
import sys
from dataclasses import dataclass, field


@dataclass
class Comparison:
    ok: bool
    # (step, base, braid, abs diff, rel diff, within tolerance) for every step both runs have.
    rows: list = field(default_factory=list)
    problems: list = field(default_factory=list)
    bitwise_equal: bool = False


def compare_losses(base, braid, rtol=1e-4, atol=1e-6):
    """Compares two per-step loss lists. Passes when the lengths match and every step satisfies
    |a - b| <= atol + rtol * |a| with a from base. A NaN or infinity on either side fails."""
    base, braid = [float(v) for v in base], [float(v) for v in braid]
    problems = []
    if len(base) != len(braid):
        problems.append(f"step counts differ: base has {len(base)}, braid has {len(braid)}")
    if not base and not braid:
        problems.append("no steps to compare")
    rows = []
    for step, (a, b) in enumerate(zip(base, braid)):
        diff = abs(a - b)
        rel = diff / abs(a) if a != 0 else (0.0 if diff == 0 else math.inf)
        good = math.isfinite(a) and math.isfinite(b) and diff <= atol + rtol * abs(a)
        rows.append((step, a, b, diff, rel, good))
    bad = [r[0] for r in rows if not r[5]]
    if bad:
        problems.append(f"{len(bad)} of {len(rows)} steps outside |a-b| <= {atol:g} + {rtol:g}*|a| "
                        f"(first: step {bad[0]})")
    return Comparison(ok=not problems, rows=rows, problems=problems,
                      bitwise_equal=not problems and base == braid)


def format_table(comparison):
    lines = [f"{'step':>4}  {'base':>22}  {'braid':>22}  {'abs diff':>10}  {'rel diff':>10}"]
    for step, a, b, diff, rel, good in comparison.rows:
        lines.append(f"{step:>4}  {a!r:>22}  {b!r:>22}  {diff:>10.3e}  {rel:>10.3e}"
                     + ("" if good else "  <-- outside tolerance"))
    return "\n".join(lines)


def compare_runs(base, braid, rtol=1e-4, atol=1e-6):
    """Compares two train_ddp.py result dicts: the losses (compare_losses), that both ran the same
    configuration, and that each run's ranks ended with identical parameters."""
    result = compare_losses(base.get("losses", []), braid.get("losses", []), rtol, atol)
    for key in ("world_size", "params", "steps", "batch", "dtype"):
        if key in base and key in braid and base[key] != braid[key]:
            result.problems.append(f"{key} differs: base {base[key]!r}, braid {braid[key]!r}")
    for name, run in (("base", base), ("braid", braid)):
        if run.get("ranks_agree") is False:
            result.problems.append(f"{name}: ranks ended with different parameters "
                                   f"(checksum min {run.get('param_checksum_min')!r} "
                                   f"max {run.get('param_checksum_max')!r})")
    result.ok = not result.problems
    return result


def main(argv=None):
    p = argparse.ArgumentParser(description="Compare per-step losses of two train_ddp.py runs.")
    p.add_argument("base", help="plain-NCCL run's JSON")
    p.add_argument("braid", help="braid run's JSON")
    p.add_argument("--rtol", type=float, default=1e-4)
    p.add_argument("--atol", type=float, default=1e-6)
    args = p.parse_args(argv)
    with open(args.base) as f:
        base = json.load(f)
    with open(args.braid) as f:
        braid = json.load(f)

    for name, run in (("base", base), ("braid", braid)):
        print(f"{name}: world_size={run.get('world_size')} params={run.get('params')} "
              f"steps={run.get('steps')} dtype={run.get('dtype', 'float32')} torch={run.get('torch')} "
              f"nccl={run.get('nccl')} LD_PRELOAD={run.get('ld_preload', '')!r}")
    if not braid.get("ld_preload"):
        print("warning: the braid run has no LD_PRELOAD; this compares two plain-NCCL runs")

    result = compare_runs(base, braid, args.rtol, args.atol)
    print(format_table(result))
    if "param_checksum" in base and "param_checksum" in braid:
        a, b = base["param_checksum"], braid["param_checksum"]
        print(f"param_checksum: base {a!r} braid {b!r} abs diff {abs(a - b):.3e} "
              f"(informational; ranks_agree base={base.get('ranks_agree')} braid={braid.get('ranks_agree')})")
    if result.ok:
        how = "bitwise equal" if result.bitwise_equal else f"within rtol={args.rtol:g} atol={args.atol:g}"
        print(f"PASS: {len(result.rows)} steps, braid's losses {how} of plain NCCL's")
        if base.get("world_size") == 2 and not result.bitwise_equal:
            print("note: with 2 ranks every element's sum is a+b, which does not depend on order, so "
                  "bitwise equal losses were expected; a difference this small still deserves a look")
        return 0
    for problem in result.problems:
        print(f"FAIL: {problem}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
