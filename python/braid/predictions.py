"""Without a GPU, `braid bench` shows braid against NCCL on 2, 4 and 8 H200s: the predictions of
braid-sim's model (`braid-sim versus-nccl`), calibrated to the 2- and 4-GPU measurements stored in
bench/calibration/h200-measured.json, each beside the measured ratio and its date where one was
stored. These are predictions, and the output says so; bench/calibration/README.md gives the model.
"""

from typing import Dict, List, Optional

from braid.sizes import format_size

# The H200 machines the model is calibrated for, as bundled topologies, with their names.
MACHINES = {"h200x2": "2x H200", "h200x4": "4x H200", "h200x8": "8x H200 (HGX, not yet measured)"}
SIZES = ["-b", "16M", "-e", "1G", "-f", "4"]
QUICK_SIZES = ["-b", "64M", "-e", "1G", "-f", "16"]
COLLECTIVES = ["all_gather", "all_reduce", "reduce_scatter"]
# For braid bench's progress count (bench.expected_rows).
DEFAULTS = {"b": "16M", "e": "1G", "f": "4", "collectives": len(COLLECTIVES)}


def covers(topo: str) -> bool:
    """Whether `--topo` names one of the calibrated machines (then all three are shown)."""
    return topo in MACHINES


def run_args(quick: bool) -> List[List[str]]:
    """braid-sim arguments, one run per machine."""
    sizes = QUICK_SIZES if quick else SIZES
    return [["versus-nccl", "--topo", m] + sizes + ["-C"] + COLLECTIVES for m in MACHINES]


def banner(why: str) -> str:
    return (f"braid bench: {why} - braid against NCCL on 2, 4 and 8 H200s as PREDICTED by braid-sim's model "
            "(calibrated to the stored 2- and 4-GPU measurements), beside the measured ratios; not measured here")


def _measured_text(m: Optional[dict]) -> str:
    if not m:
        return "-"
    if m["ratio_low"] == m["ratio_high"]:
        return f"{m['ratio_low']:.2f}"
    return f"{m['ratio_low']:.2f}-{m['ratio_high']:.2f}"


def summary_lines(parts: List[dict]) -> List[str]:
    """The table: per machine and collective, the predicted ratio at each size (as nccl-tests
    measures it, and settled over a long run), and the measured ratio with its date."""
    if not parts:
        return []
    dates = sorted({p["result"].get("calibrated_to", "") for p in parts} - {""})
    lines = [f"braid bench: predictions (model calibrated to measurements of {', '.join(dates)}), "
             "braid/NCCL busbw; NOT measured on this machine",
             "  predicted = as nccl-tests measures it (braid's balancer learns its split too late for "
             "nccl-tests' few calls per size); settled = over a long run (training), the balancer's split"]
    for part in parts:
        result = part["result"]
        by_collective: Dict[str, List[dict]] = {}
        for r in result.get("rows", []):
            by_collective.setdefault(r["collective"], []).append(r)
        name = MACHINES.get(result.get("topology"), result.get("topology"))
        lines.append(f"  {name}, {result.get('ranks')} ranks:")
        sizes = sorted({r["size"] for rows in by_collective.values() for r in rows})
        lines.append("    " + f"{'':16}{'':10}" + "".join(f"{format_size(int(s)):>12}" for s in sizes))
        for collective, rows in by_collective.items():
            at = {r["size"]: r for r in rows}
            cells = {"predicted": [], "settled": [], "measured": []}
            dated = set()
            for s in sizes:
                r = at.get(s)
                cells["predicted"].append(f"{r['ratio']:.2f}" if r else "")
                cells["settled"].append(f"{r['settled_ratio']:.2f}" if r else "")
                m = r.get("measured") if r else None
                cells["measured"].append(_measured_text(m))
                if m:
                    dated.add(m["date"])
            for i, (what, values) in enumerate(cells.items()):
                when = f"  ({', '.join(sorted(dated))})" if what == "measured" and dated else ""
                if what == "measured" and not dated:
                    when = "  (none yet)"
                lines.append(f"    {collective if i == 0 else '':16}{what:10}" + "".join(f"{v:>12}" for v in values)
                             + when)
    return lines
