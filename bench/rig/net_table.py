#!/usr/bin/env python3
"""The net suite's logs side by side (bench/rig/run.sh net N): per collective and size, the
out-of-place busbw (GB/s) of each variant, the #wrong of all its rows, and the ratios that matter:
braid's plugin on one NIC (with one progress thread, and with two where braid-net-1nic-2thr ran)
against NCCL's socket transport on the same interface, and two NICs
against one (shaped: the 1.8x of issue 20). Also says whether each braid log shows NCCL loading
the plugin (NCCL_DEBUG_SUBSYS=INIT,NET prints "Loaded net plugin braid")."""
import collections
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import summarize  # noqa: E402  (the rig's own log reader)

LOG = re.compile(r"^(?P<variant>[\w-]+)_n(?P<ranks>\d+)_(?P<coll>\w+)\.log$")
VARIANTS = ["plain-socket", "braid-net-1nic", "braid-net-1nic-2thr", "braid-net-2nic", "braid-net-1nic-shaped",
            "braid-net-2nic-shaped"]
RATIOS = [("braid-net-1nic", "plain-socket", "braid 1 NIC / NCCL socket"),
          ("braid-net-1nic-2thr", "plain-socket", "1 NIC 2 threads / NCCL"),
          ("braid-net-2nic", "braid-net-1nic", "2 NICs / 1 NIC"),
          ("braid-net-2nic-shaped", "braid-net-1nic-shaped", "shaped: 2 NICs / 1 NIC")]


def read(folder):
    table = collections.defaultdict(dict)  # (ranks, coll) -> variant -> {size: busbw}
    wrong, loaded, failed = collections.Counter(), {}, []
    for name in sorted(os.listdir(folder)):
        m = LOG.match(name)
        if not m:
            continue
        log = summarize.Log(os.path.join(folder, name))
        parsed = summarize.parse_nccl_tests(log)
        key = (int(m["ranks"]), m["coll"])
        sizes = summarize.busbw_by_size(parsed)
        table[key][m["variant"]] = sizes
        wrong[(key, m["variant"])] += len(parsed["wrong"])
        if m["variant"].startswith("braid"):
            with open(os.path.join(folder, name), errors="replace") as f:
                loaded[(key, m["variant"])] = "Loaded net plugin braid" in f.read()
        if log.rc not in (None, 0) or log.timed_out or not parsed["rows"]:
            failed.append(f"{name}: rc={log.rc}{' TIMEOUT' if log.timed_out else ''}, {len(parsed['rows'])} rows")
    return table, wrong, loaded, failed


def main(argv):
    folder = argv[0] if argv else "."
    table, wrong, loaded, failed = read(folder)
    out = []
    for (ranks, coll), by_variant in sorted(table.items()):
        variants = [v for v in VARIANTS if v in by_variant]
        # The two-thread variant is opt-in (RIG_NET_VARIANTS): its ratio only where it ran.
        ratios = [r for r in RATIOS if r[0] != "braid-net-1nic-2thr" or r[0] in by_variant]
        out.append(f"== {coll}, {ranks} ranks: out-of-place busbw (GB/s); #wrong: rows with wrong elements")
        out.append("  {:>12} ".format("size") + " ".join(f"{v[:21]:>21}" for v in variants)
                   + "".join(f" {label[:24]:>24}" for _, _, label in ratios))
        out.append("  {:>12} ".format("#wrong") + " ".join(f"{wrong[((ranks, coll), v)]:>21}" for v in variants))
        out.append("  {:>12} ".format("plugin") + " ".join(
            f"{('loaded' if loaded.get(((ranks, coll), v)) else 'NOT LOADED') if v.startswith('braid') else '-':>21}"
            for v in variants))
        sizes = sorted({s for v in variants for s in by_variant[v]})
        for s in sizes:
            cells = [by_variant[v].get(s) for v in variants]
            line = "  {:>12} ".format(s) + " ".join(f"{c:>21.3f}" if c is not None else f"{'-':>21}" for c in cells)
            for a, b, _ in ratios:
                x, y = by_variant.get(a, {}).get(s), by_variant.get(b, {}).get(s)
                line += f" {x / y:>24.2f}" if x and y else f" {'-':>24}"
            out.append(line)
    for f in failed:
        out.append("  FAILED: " + f)
    print("\n".join(out) if out else "no net logs")
    bad = sum(n for (key, v), n in wrong.items() if v.startswith("braid")) + len(failed) + \
        sum(1 for ok in loaded.values() if not ok)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
