#!/usr/bin/env python3
"""The gpus suite's logs side by side (bench/rig/run.sh gpus N): per launch mode, collective and
size, nccl-tests' out-of-place busbw (GB/s) of plain NCCL and of each braid variant, each braid
variant's ratio to plain NCCL's default in the same call and, where the call also ran NCCL in
other modes (variants "plain-<mode>", e.g. plain-r1 for -R 1, plain-ce for -R 2 -x 2), to the
best plain variant of each size; the #wrong of every log, and where braid logged them
(BRAID_DEBUG=INFO), its "routed exchange" lines. Logs are named
<variant>_<mode>_<collective>.log, the variant "plain", "plain-..." or starting with "braid",
neither it nor the mode holding an underscore. Exit code 1 when a
braid log has wrong rows, failed, timed out or printed no rows."""
import collections
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import summarize  # noqa: E402  (the rig's own log reader)

LOG = re.compile(r"^(?P<variant>plain(?:-[a-z0-9-]+)?|braid[a-z0-9-]*)_(?P<mode>[a-z0-9-]+)_(?P<coll>[a-z_]+)\.log$")


def is_plain(variant):
    return variant == "plain" or variant.startswith("plain-")


def read(folder):
    table = collections.defaultdict(dict)  # (mode, coll) -> variant -> {size: busbw}
    wrong, routed, failed, skipped = collections.Counter(), collections.Counter(), [], []
    for name in sorted(os.listdir(folder)):
        m = LOG.match(name)
        if not m:
            continue
        log = summarize.Log(os.path.join(folder, name))
        if log.skipped:  # run.sh's budget left no time for it: said, neither passed nor failed
            skipped.append(name)
            continue
        parsed = summarize.parse_nccl_tests(log)
        sizes = summarize.busbw_by_size(parsed)
        key = (m["mode"], m["coll"])
        table[key][m["variant"]] = sizes
        wrong[(key, m["variant"])] += len(parsed["wrong"])
        routed[(key, m["variant"])] += summarize.routed_exchanges(os.path.join(folder, name))
        if log.rc not in (None, 0) or log.timed_out or not parsed["rows"]:
            failed.append((m["variant"], f"{name}: rc={log.rc}{' TIMEOUT' if log.timed_out else ''}, "
                                         f"{len(parsed['rows'])} rows"))
    return table, wrong, routed, failed, skipped


def main(argv):
    folder = argv[0] if argv else "."
    table, wrong, routed, failed, skipped = read(folder)
    out = []
    for (mode, coll), by_variant in sorted(table.items()):
        variants = (["plain"] if "plain" in by_variant else []) + sorted(v for v in by_variant if v != "plain")
        braids = [v for v in variants if not is_plain(v) and "plain" in by_variant]
        plains = [v for v in variants if is_plain(v)]
        best = [v for v in variants if not is_plain(v)] if len(plains) > 1 else []  # against NCCL's best mode
        out.append(f"== {coll}, {mode}: out-of-place busbw (GB/s); ratios against plain NCCL in the same call")
        out.append("  {:>12} ".format("size") + " ".join(f"{v[:18]:>18}" for v in variants)
                   + "".join(f" {(v + '/plain')[:22]:>22}" for v in braids)
                   + "".join(f" {(v + '/best')[:22]:>22}" for v in best))
        out.append("  {:>12} ".format("#wrong") + " ".join(f"{wrong[((mode, coll), v)]:>18}" for v in variants))
        if any(routed[((mode, coll), v)] for v in variants):  # braid's "routed exchange" INFO lines
            out.append("  {:>12} ".format("routed") + " ".join(f"{routed[((mode, coll), v)]:>18}" for v in variants))
        for s in sorted({s for v in variants for s in by_variant[v]}):
            line = "  {:>12} ".format(s) + " ".join(
                f"{by_variant[v][s]:>18.2f}" if s in by_variant[v] else f"{'-':>18}" for v in variants)
            for v in braids:
                x, y = by_variant[v].get(s), by_variant["plain"].get(s)
                line += f" {x / y:>22.2f}" if x and y else f" {'-':>22}"
            top = max((by_variant[p].get(s) or 0 for p in plains), default=0)
            for v in best:
                x = by_variant[v].get(s)
                line += f" {x / top:>22.2f}" if x and top else f" {'-':>22}"
            out.append(line)
    for variant, text in failed:
        out.append(("  FAILED: " if not is_plain(variant) else "  failed (plain NCCL): ") + text)
    if skipped:
        out.append(f"  skipped (budget): {len(skipped)} logs: " + " ".join(skipped))
    print("\n".join(out) if out else "no logs")
    bad = sum(n for (_, v), n in wrong.items() if not is_plain(v)) + sum(1 for v, _ in failed if not is_plain(v))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
