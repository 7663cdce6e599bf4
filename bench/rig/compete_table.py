#!/usr/bin/env python3
"""The compete suite's logs side by side (bench/rig/compete.sh): per workload and size, NCCL's socket
transport (plain-socket) and braid's plugin (braid-net), each without (quiet) and with (compete) a
competing flow on NIC 0, the ratios braid / NCCL, and issue 20's goal (>= 1.3x under the competing
flow) at the largest size. nccl-tests logs: out-of-place busbw (GB/s) and #wrong; net_bench logs
(the CPU machine's stand-in workload): the receiver's MB/s. Also each log's share of host 0's sent
bytes that went through nic1 (tc's counters: NCCL should leave nic1 idle, braid should use it), and
mode.txt's first line, which says whether the comparison is fair (namespaces) or not (loopback).

  compete_table.py FOLDER       exit 1: a braid log with wrong rows, a failure, or no plugin loaded
"""
import collections
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import summarize  # noqa: E402  (the rig's own log reader)

LOG = re.compile(r"^(?P<variant>plain-socket-2nic|plain-socket|braid-net)_(?P<cond>quiet|compete)_n(?P<ranks>\d+)_(?P<work>\w+)\.log$")
COLUMNS = [("plain-socket", "quiet"), ("braid-net", "quiet"), ("plain-socket", "compete"), ("braid-net", "compete")]
# Opt-in (COMPETE_VARIANTS): NCCL's socket transport over both NICs, shown after the four.
TWO_NIC = [("plain-socket-2nic", "quiet"), ("plain-socket-2nic", "compete")]
NET_BENCH = re.compile(r"^\S+\s+recv\s.*: (\d+) bytes in [\d.]+ s = ([\d.]+) MB/s")
NIC_BYTES = re.compile(r"^# nic-bytes (\S+) (\S+) (-?\d+)")
GOAL = 1.3


def read_log(path, work):
    """(size -> bandwidth, #wrong rows, plugin loaded, failure text or None, nic1 share or None)."""
    log = summarize.Log(path)
    sizes, wrong = {}, 0
    with open(path, errors="replace") as f:
        text = f.read()
    sent = collections.Counter()
    for line in text.splitlines():
        m = NIC_BYTES.match(line)
        if m and m[1] == "h0":
            sent[m[2]] += int(m[3])
    # Under a megabyte is chatter (ARP), not a transfer: no share.
    share = sent["nic1"] / sum(sent.values()) if sum(sent.values()) >= 1e6 else None
    if work == "net_bench":
        for line in log.lines:
            m = NET_BENCH.match(line.strip())
            if m:
                sizes[int(m[1])] = float(m[2])
    else:
        parsed = summarize.parse_nccl_tests(log)
        for row in parsed["rows"]:
            try:
                sizes[int(row[0])] = float(row[7])
            except (ValueError, IndexError):
                pass
        wrong = len(parsed["wrong"])
    failed = None
    if log.skipped:
        failed = "skipped (budget)"
    elif log.rc not in (None, 0) or log.timed_out or not sizes:
        failed = f"rc={log.rc}{' TIMEOUT' if log.timed_out else ''}, {len(sizes)} sizes"
    loaded = "Loaded net plugin braid" in text if work != "net_bench" else True
    return sizes, wrong, loaded, failed, share


def ratio(a, b):
    return a / b if a and b else None


def main(argv):
    folder = argv[0] if argv else "."
    mode = ""
    if os.path.exists(os.path.join(folder, "mode.txt")):
        with open(os.path.join(folder, "mode.txt")) as f:
            modes = [l.strip() for l in f if l.startswith("mode:")]
            mode = modes[-1] if modes else ""
    fair = mode.startswith("mode: namespaces")
    data = collections.defaultdict(dict)  # (ranks, work) -> (variant, cond) -> read_log(...)
    for name in sorted(os.listdir(folder)):
        m = LOG.match(name)
        if m:
            data[(int(m["ranks"]), m["work"])][(m["variant"], m["cond"])] = read_log(os.path.join(folder, name), m["work"])
    out = [mode or "mode: unknown (no mode.txt)"]
    bad = 0
    for (ranks, work), cols in sorted(data.items()):
        unit = "MB/s received" if work == "net_bench" else "out-of-place busbw, GB/s"
        out.append(f"== {work}, {ranks} ranks: {unit}; quiet / compete: without / with a competing flow on nic0")
        # net_bench's stand-in for NCCL's socket transport is a plain socket loop: named as such.
        base = "plain" if work == "net_bench" else "NCCL"
        columns = COLUMNS + [k for k in TWO_NIC if k in cols]
        names = [f"{v.replace('plain-socket', base + '-socket').replace('braid-net', 'braid')} {c}" for v, c in columns]
        two = bool(columns[4:])
        out.append("  {:>12} ".format("size") + " ".join(f"{n:>20}" for n in names)
                   + f" {'braid/' + base + ' quiet':>17} {'braid/' + base + ' compete':>19}"
                   + (f" {'braid/2nic compete':>19}" if two else ""))
        get = {k: cols.get(k) for k in columns}
        out.append("  {:>12} ".format("#wrong") + " ".join(f"{(g[1] if g else '-'):>20}" for g in get.values()))
        out.append("  {:>12} ".format("nic1 share") + " ".join(
            f"{(f'{g[4]:.2f}' if g and g[4] is not None else '-'):>20}" for g in get.values()))
        if work != "net_bench":
            out.append("  {:>12} ".format("plugin") + " ".join(
                f"{(('loaded' if g[2] else 'NOT LOADED') if g else '-') if k[0] == 'braid-net' else '-':>20}"
                for k, g in get.items()))
        sizes = sorted({s for g in get.values() if g for s in g[0]})
        last = None
        for s in sizes:
            vals = [g[0].get(s) if g else None for g in get.values()]
            rq, rc = ratio(vals[1], vals[0]), ratio(vals[3], vals[2])
            r2 = ratio(vals[3], get.get(("plain-socket-2nic", "compete"), ({},))[0].get(s)) if two else None
            out.append("  {:>12} ".format(s) + " ".join(f"{v:>20.3f}" if v is not None else f"{'-':>20}" for v in vals)
                       + (f" {rq:>17.2f}" if rq else f" {'-':>17}") + (f" {rc:>19.2f}" if rc else f" {'-':>19}")
                       + ((f" {r2:>19.2f}" if r2 else f" {'-':>19}") if two else ""))
            if rc:
                last = (s, rc)
        if last:
            verdict = "met" if last[1] >= GOAL else "NOT met"
            out.append(f"  under a competing flow at {last[0]} B: braid / {base} socket = {last[1]:.2f} "
                       f"(goal >= {GOAL}: {verdict}{'' if fair else '; NOT FAIR: loopback, see mode'})")
        else:
            out.append("  under a competing flow: no ratio (a side is missing or failed)")
        for k, g in get.items():
            if not g:
                continue
            if g[3]:
                out.append(f"  FAILED: {k[0]}_{k[1]}_n{ranks}_{work}.log: {g[3]}")
                bad += 1 if g[3] != "skipped (budget)" else 0
            if k[0] == "braid-net" and (g[1] or not g[2]):
                bad += 1
    if not data:
        out.append("no compete logs")
    print("\n".join(out))
    return 1 if bad or not data else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
