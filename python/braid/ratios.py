"""braid/NCCL ratios of a `braid bench` run, and the check of a run against a baseline's.

Absolute GB/s differ from machine to machine and run to run; the ratio of braid's algbw to NCCL's
measured in the same run (same process, same buffers, alternating repetitions) is what a change
to braid moves. A baseline is an earlier results.json (or any JSON with its "ratios" list).
Without a GPU the ratio is the model's: braid against NCCL's measured curve on the H200 machines
(braid-sim versus-nccl), elsewhere braid's predicted time against a predicted host-staged ring's.
"""

import dataclasses
from typing import Dict, List, Tuple

from braid.sizes import format_size

BRAID_PATHS = ("braid", "braid_multipath")


def _key(row) -> Tuple:
    return (row.get("collective"), row.get("size"), row.get("type"), row.get("redop"), row.get("in_place"))


def _series_name(label: str, row) -> str:
    name = f"{row['collective']} {label}"
    if row.get("type") not in (None, "float"):
        name += f" {row['type']}"
    if row.get("redop") not in (None, "none", "sum"):
        name += f" {row['redop']}"
    if row.get("in_place"):
        name += " in-place"
    return name


def ratio_table(results) -> List[dict]:
    """[{series, size, ratio, braid_algbw, baseline_algbw}] over every run of a results.json."""
    table = []
    for run in results.get("runs", []):
        rows = run["result"].get("rows", [])
        if results.get("predicted"):
            for r in rows:
                if r.get("nccl_time_us"):  # braid-sim versus-nccl: the model's braid against NCCL's curve
                    table.append({"series": f"{r['collective']} {run['label']} predicted vs NCCL", "size": r["size"],
                                  "ratio": r["ratio"], "braid_algbw": r["algbw"],
                                  "baseline_algbw": r["size"] / (r["nccl_time_us"] * 1e-6) / 1e9})
                    continue
                ring_us = r.get("ring_time_us") or 0
                if ring_us > 0 and r.get("time_us"):
                    table.append({"series": f"{r['collective']} predicted vs ring", "size": r["size"],
                                  "ratio": ring_us / r["time_us"], "braid_algbw": r["algbw"],
                                  "baseline_algbw": r["size"] / (ring_us * 1e-6) / 1e9})
            continue
        nccl: Dict[Tuple, dict] = {_key(r): r for r in rows if r.get("path") == "nccl"}
        for r in rows:
            other = nccl.get(_key(r))
            if r.get("path") in BRAID_PATHS and other and other.get("algbw", 0) > 0:
                table.append({"series": _series_name(run["label"], r), "size": r["size"],
                              "ratio": r["algbw"] / other["algbw"], "braid_algbw": r["algbw"],
                              "baseline_algbw": other["algbw"]})
    return table


def summary_lines(table, predicted=False) -> List[str]:
    """One line per series: each size's ratio, in the order measured."""
    by_series: Dict[str, List[str]] = {}
    for r in table:
        by_series.setdefault(r["series"], []).append(f"{format_size(int(r['size']))} {r['ratio']:.2f}")
    what = "" if predicted else " (braid/NCCL algbw)"  # predicted series say so in their name
    return [f"  ratio {series}{what}: " + ", ".join(points) for series, points in by_series.items()]


@dataclasses.dataclass
class Verdict:
    tolerance: float
    compared: List[Tuple[str, int, float, float]] = dataclasses.field(default_factory=list)  # series, size, base, now
    regressions: List[Tuple[str, int, float, float]] = dataclasses.field(default_factory=list)
    missing: List[Tuple[str, int]] = dataclasses.field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.compared) and not self.regressions and not self.missing

    def text(self) -> str:
        lines = [f"braid bench --check: {len(self.compared)} ratios compared, tolerance {self.tolerance:.1%}"]
        for series, size, base, now in self.regressions:
            lines.append(f"  REGRESSION {series} at {size} B: ratio {now:.3f}, baseline's {base:.3f} "
                         f"({now / base - 1:+.1%})")
        for series, size in self.missing:
            lines.append(f"  MISSING {series} at {size} B: in the baseline, not in this run")
        if not self.compared:
            lines.append("  nothing in common with the baseline: wrong baseline for this job?")
        lines.append("PASS" if self.ok else "FAIL")
        return "\n".join(lines)


def _ratios_of(doc) -> Dict[Tuple[str, int], float]:
    rows = doc["ratios"] if isinstance(doc, dict) and "ratios" in doc else doc
    return {(r["series"], int(r["size"])): float(r["ratio"]) for r in rows}


def check(baseline, results, tolerance: float = 0.05) -> Verdict:
    """Fails where a ratio fell more than `tolerance` (relative) below the baseline's, or where a
    ratio of the baseline is absent. Ratios that rose, or are new, pass."""
    base, now = _ratios_of(baseline), _ratios_of(results)
    verdict = Verdict(tolerance)
    for key, was in sorted(base.items()):
        if key not in now:
            verdict.missing.append(key)
            continue
        entry = (key[0], key[1], was, now[key])
        verdict.compared.append(entry)
        if now[key] < was * (1 - tolerance):
            verdict.regressions.append(entry)
    return verdict
