"""`braid trace FILE.jsonl`: plots a split trace (BRAID_SPLIT_TRACE, `braid run --trace`): the
balancer's PCIe share and each path's time per split call.

Each line is one split call as src/multipath/split_trace.cpp writes it (rank 0 of the
communicator): call, collective, dtype, bytes, count, nccl_elements, pcie_elements, pcie_share,
nccl_ms, pcie_ms (each path's time, slowest rank), timed, next_pcie_share, nvlink_path, caller_us
(rank 0's calling thread inside the call). A call
braid would split by its size but gives to NCCL alone (inside a group, captured in a CUDA graph,
...) is a line {"declined": reason, collective, dtype, bytes, count}: counted, not plotted.
"""

import json
import os
import sys
from collections import Counter

from braid import plots

FIELDS = ("call", "collective", "bytes", "pcie_share", "nccl_ms", "pcie_ms", "next_pcie_share")


def read_trace(path, declined=None):
    """The split calls of a trace file; declined calls go to `declined` (a list) when given; lines
    that are not whole records are reported and skipped (a process killed mid-write leaves a
    partial last line)."""
    records, bad = [], 0
    with open(path) as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError:
                bad += 1
                print(f"braid trace: {path}:{number}: not JSON, skipped", file=sys.stderr)
                continue
            if "declined" in record:
                if declined is not None:
                    declined.append(record)
                continue
            missing = [k for k in FIELDS if k not in record]
            if missing:
                bad += 1
                print(f"braid trace: {path}:{number}: lacks {', '.join(missing)}, skipped", file=sys.stderr)
                continue
            records.append(record)
    return records, bad


def declined_lines(declined):
    """One line per (reason, collective, size): how many calls braid gave to NCCL alone, and why."""
    counts = Counter((d["declined"], d.get("collective", "?"), d.get("bytes", 0)) for d in declined)
    return [f"declined {n} x {collective} {size} B: {reason}" for (reason, collective, size), n in sorted(counts.items())]


def main(args, extra) -> int:
    if not os.path.isfile(args.trace):
        print(f"braid trace: no file {args.trace}: `braid run --trace {args.trace} -- COMMAND` writes one",
              file=sys.stderr)
        return 2
    declined = []
    records, bad = read_trace(args.trace, declined)
    for line in declined_lines(declined):
        print(line)
    if not records:
        print(f"braid trace: no split call in {args.trace}", file=sys.stderr)
        return 1
    png = args.output or os.path.splitext(args.trace)[0] + ".png"
    plots.plot_trace(records, png)
    for s in plots.trace_series(records):
        print(f"{s['collective']} {s['bytes']} B: {len(s['call'])} calls, PCIe share {s['pcie_share'][0]:.3f} "
              f"-> {s['pcie_share'][-1]:.3f}, last times NVLink {s['nccl_ms'][-1]:.3f} ms / PCIe {s['pcie_ms'][-1]:.3f} ms")
    print(f"braid trace: plot in {os.path.abspath(png)}")
    return 1 if bad and not args.lenient else 0


def add_parser(sub):
    p = sub.add_parser("trace", help="plot a split trace: the balancer's shares and each path's time per call")
    p.add_argument("trace", help="the JSON-lines file (braid run --trace FILE, or BRAID_SPLIT_TRACE)")
    p.add_argument("-o", "--output", help="PNG to write (default: the trace's name with .png)")
    p.add_argument("--lenient", action="store_true", help="exit 0 even when some lines were skipped")
    p.set_defaults(func=main)
    return p
