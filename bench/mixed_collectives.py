#!/usr/bin/env python3
"""A seeded random sequence of mixed collectives over several process groups, every result checked.

Each rank runs the same sequence (one seed): all_reduce, all_gather, reduce_scatter, broadcast,
all_to_all and send/recv (a ring), in float32, bfloat16, float16 and int32, sizes log-uniform from
`--min-mb` to `--max-mb`, each on one of three process groups (the world, a second group of every
rank, and pairs of ranks). Inputs are small integers that depend on the rank, the call and the
element, so every result is exact in every type; each is compared on the GPU with the expected
one, computed apart from the collective, and mismatching elements are counted without a sync per
call. Reports the loop time, the first 100 calls' time (a sync after call 100) and the wrong
elements, plain and with libbraid.so preloaded, alternating, `--pairs` times:

    python3 bench/mixed_collectives.py --ranks 4 --calls 1000 --braid gpubundle/lib/libbraid.so [--json out.json]
"""
import argparse
import json
import math
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ranks as launcher  # noqa: E402

KINDS = ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all", "send_recv"]
DTYPES = ["float32", "bfloat16", "float16", "int32"]
FIRST = 100


def sequence(seed, calls, ranks, min_mb, max_mb):
    rng = random.Random(seed)
    out = []
    for i in range(calls):
        kind = rng.choice(KINDS)
        dtype = rng.choice(DTYPES)
        group = rng.choice(["world", "world2", "pairs"] if ranks >= 2 else ["world"])
        mb = math.exp(rng.uniform(math.log(min_mb), math.log(max_mb)))
        root = rng.randrange(ranks)
        out.append({"i": i, "kind": kind, "dtype": dtype, "group": group, "bytes": int(mb * (1 << 20)), "root": root})
    return out


def child(args):
    import torch
    import torch.distributed as dist
    rank, world, dev = launcher.init_rank()
    groups = {"world": (dist.group.WORLD, list(range(world))), "world2": (dist.new_group(list(range(world))), list(range(world)))}
    pair_groups = [dist.new_group([p, p + 1]) for p in range(0, world - 1, 2)]
    if rank // 2 < len(pair_groups):
        groups["pairs"] = (pair_groups[rank // 2], [2 * (rank // 2), 2 * (rank // 2) + 1])
    wrong = torch.zeros((), dtype=torch.int64, device=dev)

    def values(owner, i, n, dtype, offset=0):
        # Small integers (at most 16; sums over 8 ranks stay exact in bfloat16).
        j = torch.arange(offset, offset + n, device=dev, dtype=torch.int64)
        return ((owner * 7 + j) % 13 + i % 5).to(dtype)

    calls = sequence(args.seed, args.calls, world, args.min_mb, args.max_mb)
    torch.cuda.synchronize()
    dist.barrier()
    t0 = time.time()
    t_first = None
    done = 0
    for c in calls:
        if c["group"] not in groups:
            continue
        group, members = groups[c["group"]]
        m = len(members)
        me = members.index(rank)
        dtype = getattr(torch, c["dtype"])
        esize = torch.empty((), dtype=dtype).element_size()
        i = c["i"]
        if c["kind"] in ("all_gather", "reduce_scatter", "all_to_all"):
            n = max(1, c["bytes"] // esize // m)
        else:
            n = max(1, c["bytes"] // esize)
        if c["kind"] == "all_reduce":
            x = values(rank, i, n, dtype)
            dist.all_reduce(x, group=group)
            expected = sum(values(q, i, n, torch.int64) for q in members).to(dtype)
            got = x
        elif c["kind"] == "all_gather":
            out = torch.empty(n * m, dtype=dtype, device=dev)
            dist.all_gather_into_tensor(out, values(rank, i, n, dtype), group=group)
            expected = torch.cat([values(q, i, n, dtype) for q in members])
            got = out
        elif c["kind"] == "reduce_scatter":
            out = torch.empty(n, dtype=dtype, device=dev)
            dist.reduce_scatter_tensor(out, values(rank, i, n * m, dtype), group=group)
            expected = sum(values(q, i, n, torch.int64, offset=me * n) for q in members).to(dtype)
            got = out
        elif c["kind"] == "broadcast":
            root = members[c["root"] % m]
            x = values(rank, i, n, dtype)
            dist.broadcast(x, src=root, group=group)
            expected = values(root, i, n, dtype)
            got = x
        elif c["kind"] == "all_to_all":
            out = torch.empty(n * m, dtype=dtype, device=dev)
            dist.all_to_all_single(out, values(rank, i, n * m, dtype), group=group)
            expected = torch.cat([values(q, i, n, dtype, offset=me * n) for q in members])
            got = out
        else:  # send_recv: a ring over the group
            nxt, prv = members[(me + 1) % m], members[(me - 1) % m]
            out = torch.empty(n, dtype=dtype, device=dev)
            ops = [dist.P2POp(dist.isend, values(rank, i, n, dtype), nxt, group=group),
                   dist.P2POp(dist.irecv, out, prv, group=group)]
            for req in dist.batch_isend_irecv(ops):
                req.wait()
            expected = values(prv, i, n, dtype)
            got = out
        wrong += (got != expected).sum()
        done += 1
        if done == FIRST:
            torch.cuda.synchronize()
            t_first = time.time() - t0
    torch.cuda.synchronize()
    loop = time.time() - t0
    print(json.dumps({"rank": rank, "calls": done, "loop_s": loop, "first_100_s": t_first,
                      "wrong": int(wrong.item()), "thread_cpu_s": launcher.thread_cpu_seconds()}), flush=True)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    launcher.add_job_arguments(p, timeout=400)
    p.add_argument("--calls", type=int, default=1000)
    p.add_argument("--seed", type=int, default=41)
    p.add_argument("--min-mb", type=float, default=1.0)
    p.add_argument("--max-mb", type=float, default=256.0)
    args = p.parse_args()
    if args.child:
        return child(args)
    forwarded = ["--calls", str(args.calls), "--seed", str(args.seed), "--min-mb", str(args.min_mb),
                 "--max-mb", str(args.max_mb)]
    runs = launcher.alternate_pairs(__file__, "mixed", forwarded, args)
    summary = {}
    for mode in ("plain", "braid"):
        good = [r for r in runs if r["mode"] == mode and r["status"] == "ok" and all(r["ranks"])]
        summary[mode] = {"runs_ok": len(good),
                         "loop_s": launcher.median([max(x["loop_s"] for x in r["ranks"]) for r in good]),
                         "first_100_s": launcher.median([max(x["first_100_s"] or 0 for x in r["ranks"]) for r in good]),
                         "wrong": sum(x["wrong"] for r in good for x in r["ranks"])}
    pl, br = summary["plain"], summary["braid"]
    print(f"\n{args.ranks} ranks, {args.calls} calls, seed {args.seed}, medians of {args.pairs} pairs (slowest rank):")
    for k in ("loop_s", "first_100_s"):
        if pl[k] and br[k]:
            print(f"  {k:12} plain {pl[k]:.3f}  braid {br[k]:.3f}  braid/plain {br[k] / pl[k]:.3f}  "
                  f"braid-plain {br[k] - pl[k]:+.3f} s")
    print(f"  wrong elements: plain {pl['wrong']}, braid {br['wrong']}; runs ok: plain {pl['runs_ok']}, braid {br['runs_ok']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"ranks": args.ranks, "calls": args.calls, "seed": args.seed, "runs": runs, "summary": summary}, f,
                      indent=1)
    ok = all(r["status"] == "ok" for r in runs) and pl["wrong"] == 0 and br["wrong"] == 0
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
