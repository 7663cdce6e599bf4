"""The pictures `braid bench` and `braid trace` draw. Each PNG gets the series it shows written
beside it (NAME.plot.json), so a test or a reader can check what was plotted without reading
pixels, and a later tool can redraw it."""

import json
import os
from collections import defaultdict


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, png: str, series) -> str:
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    with open(os.path.splitext(png)[0] + ".plot.json", "w") as f:
        json.dump({"png": os.path.basename(png), "series": series}, f, indent=1)
    return png


# What each run of braid bench (bench.py) compares: (braid's line, NCCL's line).
RUN_NAMES = {
    "multipath": ("braid (NVLink + PCIe)", "NCCL alone"),
    "pcie": ("braid's PCIe path", "NCCL's host path (NCCL_P2P_DISABLE=1)"),
}


def algbw_series(results):
    """Per collective, algbw against size for braid and for what it is compared with."""
    series = defaultdict(list)
    for run in results.get("runs", []):
        for r in run["result"].get("rows", []):
            if results.get("predicted") and r.get("nccl_time_us"):
                panel = f"{r['collective']} on {run['label']}"
                series[(panel, "braid (predicted)")].append((r["size"], r["algbw"]))
                series[(panel, "NCCL (measured curve)")].append((r["size"], r["size"] / (r["nccl_time_us"] * 1e-6) / 1e9))
            elif results.get("predicted"):
                series[(r["collective"], "braid (predicted)")].append((r["size"], r["algbw"]))
                if r.get("ring_time_us"):
                    series[(r["collective"], "host ring (predicted)")].append(
                        (r["size"], r["size"] / (r["ring_time_us"] * 1e-6) / 1e9))
            else:
                names = RUN_NAMES.get(run["label"], ("braid", "NCCL"))
                label = names[1] if r.get("path") == "nccl" else names[0]
                series[(r["collective"], label)].append((r["size"], r["algbw"]))
    out = []
    for (collective, label), points in sorted(series.items()):
        points.sort()
        out.append({"collective": collective, "label": label,
                    "size": [p[0] for p in points], "algbw": [p[1] for p in points]})
    return out


def plot_algbw(results, png: str) -> str:
    """One panel per collective: algbw (GB/s) against size, braid beside NCCL (or the ring)."""
    plt = _pyplot()
    series = algbw_series(results)
    collectives = sorted({s["collective"] for s in series}) or ["(no rows)"]
    cols = min(3, len(collectives))
    rows = (len(collectives) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.6 * rows), squeeze=False)
    for ax, collective in zip(axes.flat, collectives):
        for s in (s for s in series if s["collective"] == collective):
            style = "-" if s["label"].startswith("braid") else "--"
            ax.plot(s["size"], s["algbw"], style, marker="o", label=s["label"])
        ax.set_xscale("log", base=2)
        ax.set_title(collective)
        ax.set_xlabel("size (bytes)")
        ax.set_ylabel("algbw (GB/s)" + (" predicted" if results.get("predicted") else ""))
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(collectives):]:
        ax.axis("off")
    if results.get("predicted"):
        machines = sorted({run["label"] for run in results.get("runs", [])} - {"predicted"}) or [results.get("topology")]
        fig.suptitle(f"simulator on {', '.join(machines)}: predictions, not measurements", fontsize=9)
    return _save(fig, png, series)


def trace_series(records):
    """Per (collective, bytes) group of split calls: the PCIe share and each path's time per call."""
    groups = defaultdict(list)
    for r in records:
        groups[(r["collective"], r["bytes"])].append(r)
    out = []
    for (collective, size), calls in sorted(groups.items()):
        calls.sort(key=lambda r: r["call"])
        out.append({"collective": collective, "bytes": size,
                    "call": [r["call"] for r in calls],
                    "pcie_share": [r["pcie_share"] for r in calls],
                    "next_pcie_share": [r["next_pcie_share"] for r in calls],
                    "nccl_ms": [r["nccl_ms"] for r in calls],
                    "pcie_ms": [r["pcie_ms"] for r in calls],
                    "nvlink_path": sorted({r.get("nvlink_path", "nccl") for r in calls})})
    return out


def plot_trace(records, png: str) -> str:
    """HyLink's Figure 10: the balancer's PCIe share per call (top) and each path's time (bottom)."""
    plt = _pyplot()
    series = trace_series(records)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    for s in series:
        name = f"{s['collective']} {s['bytes']} B"
        top.plot(s["call"], s["pcie_share"], marker=".", label=f"{name}: PCIe share")
        nvlink = "NVLink (" + "/".join(s["nvlink_path"]) + ")"
        bottom.plot(s["call"], s["nccl_ms"], marker=".", label=f"{name}: {nvlink}")
        bottom.plot(s["call"], s["pcie_ms"], marker=".", linestyle="--", label=f"{name}: PCIe")
    top.set_ylabel("share on PCIe")
    top.grid(True, alpha=0.3)
    top.legend(fontsize=7)
    bottom.set_ylabel("time per call (ms, slowest rank)")
    bottom.set_xlabel("split call")
    bottom.grid(True, alpha=0.3)
    bottom.legend(fontsize=7)
    fig.suptitle("braid's balancer: shares and path times per split call", fontsize=10)
    return _save(fig, png, series)
