#!/usr/bin/env python3
"""The route suite's logs side by side (bench/rig/run.sh route N): per nccl-tests binary and rank
count, plain NCCL and braid with BRAID_ROUTE_EXCHANGES: rows, rows with wrong elements, hangs
(killed at their limit), failures, WARN lines, the number of "routed exchange:" INFO lines (one per
routed call and rank: how a run proves braid's routing engaged) and the out-of-place busbw at the
largest size. Exits 1 when a braid run has wrong rows, hangs, fails or warns, or when a
binary braid routes (alltoall, gather, scatter; alltoallv, sendrecv, hypercube through their
send/recv groups) logged no routed exchange."""
import collections
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import summarize  # noqa: E402  (the rig's own log reader)

LOG = re.compile(r"^(?P<how>plain|braid)_n(?P<ranks>\d+)_(?P<coll>\w+)\.log$")
# The binaries whose calls braid routes: ncclAlltoAll, ncclGather, ncclScatter, and groups of
# ncclSend/ncclRecv in which every rank takes part (alltoallv, sendrecv, hypercube).
ROUTED_BINARIES = {"alltoall", "gather", "scatter", "alltoallv", "sendrecv", "hypercube"}


def read_log(path):
    log = summarize.Log(path)
    parsed = summarize.parse_nccl_tests(log)
    sizes = summarize.busbw_by_size(parsed)
    largest = max(sizes) if sizes else None
    return {
        "rows": len(parsed["rows"]),
        "wrong": len(parsed["wrong"]),
        "hang": log.timed_out,
        "failed": not log.timed_out and (log.rc not in (None, 0) or not parsed["rows"] or bool(log.failures)),
        "warns": len(log.warns),
        "routed": summarize.routed_exchanges(path),
        "busbw": sizes[largest] if sizes else None,
        "largest": largest,
    }


def read(folder):
    table = collections.defaultdict(dict)  # (ranks, coll) -> how -> stats
    for name in sorted(os.listdir(folder)):
        m = LOG.match(name)
        if m:
            table[(int(m["ranks"]), m["coll"])][m["how"]] = read_log(os.path.join(folder, name))
    return table


def problems(coll, how, s):
    out = []
    if s["wrong"]:
        out.append(f"{s['wrong']} wrong rows")
    if s["hang"]:
        out.append("hang (killed at its limit)")
    if s["failed"]:
        out.append("failed")
    if how == "braid" and s["warns"]:
        out.append(f"{s['warns']} WARN lines")
    if how == "braid" and coll in ROUTED_BINARIES and not s["routed"]:
        out.append("no routed exchange logged")
    return out


def main(argv):
    folder = argv[0] if argv else "."
    table = read(folder)
    if not table:
        print("no route logs")
        return 1
    out = ["route suite: nccl-tests -c 1, plain NCCL and braid (BRAID_ROUTE_EXCHANGES); #wrong: rows with wrong"
           " elements; routed: 'routed exchange' INFO lines (all ranks)",
           "  {:>10} {:>5} {:>6} {:>5} {:>7} {:>6} {:>6} {:>6} {:>7} {:>12} {:>10}".format(
               "binary", "ranks", "run", "rows", "#wrong", "hang", "failed", "WARN", "routed", "busbw(GB/s)",
               "at bytes")]
    bad = []
    for (ranks, coll), by_how in sorted(table.items()):
        for how in ("plain", "braid"):
            s = by_how.get(how)
            if s is None:
                continue
            busbw = f"{s['busbw']:.3f}" if s["busbw"] is not None else "-"
            out.append("  {:>10} {:>5} {:>6} {:>5} {:>7} {:>6} {:>6} {:>6} {:>7} {:>12} {:>10}".format(
                coll, ranks, how, s["rows"], s["wrong"], "yes" if s["hang"] else "no", "yes" if s["failed"] else "no",
                s["warns"], s["routed"] if how == "braid" else "-", busbw, s["largest"] or "-"))
            for p in problems(coll, how, s):
                bad.append(f"  {how}_n{ranks}_{coll}: {p}")
    routed = sorted({coll for (_, coll) in table if coll in ROUTED_BINARIES})
    out.extend(bad or ["  no wrong rows, hangs, failures or braid WARN lines" +
                       (f"; {', '.join(routed)} routed" if routed else "")])
    print("\n".join(out))
    return 1 if any(line.split(":")[0].strip().startswith("braid") for line in bad) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
