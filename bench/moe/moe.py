#!/usr/bin/env python3
"""MoE token dispatch and combine as the benchmark: PyTorch all_to_all_single with uneven splits,
the way an expert-parallel MoE layer moves tokens, launched by torchrun, run once on plain NCCL
and once with braid's drop-in preloaded (LD_PRELOAD=libbraid.so); bench/moe/run.sh alternates
them and bench/moe/compare.py compares.

    torchrun --standalone --nproc_per_node=N bench/moe/moe.py --out X.json
    # one GPU shared by N processes posing as N hosts (the one-GPU rig):
    torchrun --standalone --nproc_per_node=2 --no-python bash bench/rig/one-gpu-rank.sh \\
        python3 bench/moe/moe.py --scale rig --out X.json

Each rank is one expert. Every step, for every skew: each rank draws its tokens' experts from a
Zipf(skew) popularity (bench/moe/tokens.py; skew 0 is balanced), exchanges the counts
(all_to_all_single of one integer per peer, as MoE layers do), dispatches its tokens grouped by
expert (all_to_all_single, uneven splits), the expert adds its rank to every value, and combine
sends them back (all_to_all_single, the splits reversed). Every received value is checked exactly
against what tokens.py says the sender sent (values are small integers, exact in bfloat16), after
dispatch and after combine. Dispatch (counts + tokens) and combine are timed apart, each between
two device synchronisations; a step's time is the slowest rank's; medians over the steps after
--warmup. Rank 0 writes --out JSON.
"""
import argparse
import json
import os
import socket
import statistics
import sys
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tokens  # noqa: E402

DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}
# Tokens per rank and hidden size. "full": a GPU per rank (64 MiB of bf16 tokens per rank);
# "rig": the one-GPU rig, where NCCL goes over loopback sockets (1 MiB per rank).
PRESETS = {"full": {"tokens": 8192, "hidden": 4096, "steps": 20, "warmup": 5},
           "rig": {"tokens": 1024, "hidden": 512, "steps": 10, "warmup": 3}}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scale", choices=PRESETS, default="full")
    p.add_argument("--tokens", type=int, help="tokens each rank dispatches per step")
    p.add_argument("--hidden", type=int, help="hidden size (elements per token)")
    p.add_argument("--steps", type=int)
    p.add_argument("--warmup", type=int)
    p.add_argument("--skews", default="0,0.8,1.2,2.0", help="Zipf exponents of expert popularity; 0 = balanced")
    p.add_argument("--dtype", choices=DTYPES, default="bfloat16")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda", help="cpu: gloo, for a check without GPUs")
    p.add_argument("--out", help="JSON written by rank 0")
    args = p.parse_args(argv)
    for key, value in PRESETS[args.scale].items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    args.skew_list = [float(s) for s in args.skews.split(",")]
    return args


def rows(src, dst, count, hidden, device):
    """The `count` token rows `src` sends `dst` (tokens.row_value), as int32 on `device`."""
    i = torch.arange(count, dtype=torch.int32, device=device)[:, None]
    c = torch.arange(hidden, dtype=torch.int32, device=device)[None, :]
    return (src * 37 + dst * 11 + i * 7 + c) % tokens.MODULUS


def loaded_libraries():
    """NCCL and braid libraries mapped into this process: proof of what the preload did."""
    found = set()
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split()
                name = os.path.basename(parts[-1]) if len(parts) >= 6 else ""
                if "nccl" in name or "braid" in name:
                    found.add(parts[-1])
    except OSError:
        pass
    return sorted(found)


def main(argv=None):
    args = parse_args(argv)
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    cuda = args.device == "cuda"
    if cuda:
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    dist.init_process_group(backend="nccl" if cuda else "gloo")
    dtype = DTYPES[args.dtype]

    def sync():
        if cuda:
            torch.cuda.synchronize(device)

    nccl = list(torch.cuda.nccl.version()) if cuda and isinstance(torch.cuda.nccl.version(), tuple) else None
    if rank == 0:
        print(f"moe: world={world} tokens={args.tokens} hidden={args.hidden} dtype={args.dtype} skews={args.skew_list} "
              f"steps={args.steps} warmup={args.warmup} torch={torch.__version__} nccl={nccl} "
              f"LD_PRELOAD={os.environ.get('LD_PRELOAD', '')!r}", flush=True)

    results = []
    for skew in args.skew_list:
        dispatch_s, combine_s, wrong, checked, max_bytes = [], [], 0, 0, 0
        for step in range(args.steps):
            counts = tokens.split_counts(rank, world, args.tokens, skew, step)
            send = torch.cat([rows(rank, dst, k, args.hidden, device) for dst, k in enumerate(counts)]).to(dtype)
            expect_in = tokens.expected_received(rank, world, args.tokens, skew, step)
            recv = torch.empty(sum(k for _, k in expect_in), args.hidden, dtype=dtype, device=device)
            max_bytes = max(max_bytes, send.numel() * send.element_size(), recv.numel() * recv.element_size())
            count_in = torch.tensor(counts, dtype=torch.int64, device=device)
            count_out = torch.empty_like(count_in)
            sync()
            t0 = time.perf_counter()
            dist.all_to_all_single(count_out, count_in)  # the counts, as MoE layers exchange them
            splits_in = count_out.tolist()
            dist.all_to_all_single(recv, send, output_split_sizes=splits_in, input_split_sizes=counts)
            sync()
            t1 = time.perf_counter()
            # Check what arrived: the counts, then every value of every block.
            if splits_in != [k for _, k in expect_in]:
                wrong += recv.numel()
                print(f"rank {rank} step {step} skew {skew}: counts {splits_in}, expected {[k for _, k in expect_in]}",
                      flush=True)
            else:
                at = 0
                for src, k in expect_in:
                    got = recv[at:at + k]
                    wrong += int((got != rows(src, rank, k, args.hidden, device).to(dtype)).sum().item())
                    at += k
            checked += recv.numel()
            # The expert's work: add its rank (exact: values stay below 256), then combine.
            out = recv + rank
            back = torch.empty_like(send)
            sync()
            t2 = time.perf_counter()
            dist.all_to_all_single(back, out, output_split_sizes=counts, input_split_sizes=splits_in)
            sync()
            t3 = time.perf_counter()
            at = 0
            for dst, k in enumerate(counts):
                want = (rows(rank, dst, k, args.hidden, device) + dst).to(dtype)
                wrong += int((back[at:at + k] != want).sum().item())
                at += k
            checked += back.numel()
            dispatch_s.append(t1 - t0)
            combine_s.append(t3 - t2)
        # A step takes as long as its slowest rank; wrong values are summed over ranks.
        t = torch.tensor([dispatch_s, combine_s], dtype=torch.float64, device=device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        totals = torch.tensor([wrong, checked, max_bytes], dtype=torch.int64, device=device)
        dist.all_reduce(totals, op=dist.ReduceOp.SUM)
        d, c = t[0].tolist()[args.warmup:], t[1].tolist()[args.warmup:]
        row = {"skew": skew, "dispatch_ms": statistics.median(d) * 1e3, "combine_ms": statistics.median(c) * 1e3,
               "total_ms": statistics.median([a + b for a, b in zip(d, c)]) * 1e3,
               "dispatch_ms_all": [x * 1e3 for x in t[0].tolist()], "combine_ms_all": [x * 1e3 for x in t[1].tolist()],
               "wrong": int(totals[0]), "checked": int(totals[1]), "bytes_per_rank_max_sum": int(totals[2])}
        results.append(row)
        if rank == 0:
            print(f"skew {skew}: dispatch {row['dispatch_ms']:.3f} ms, combine {row['combine_ms']:.3f} ms, "
                  f"wrong {row['wrong']} of {row['checked']}", flush=True)

    if rank == 0 and args.out:
        with open(args.out, "w") as f:
            json.dump({"tool": "bench/moe/moe.py", "world_size": world, "host": socket.gethostname(),
                       "config": {"tokens": args.tokens, "hidden": args.hidden, "dtype": args.dtype,
                                  "steps": args.steps, "warmup": args.warmup, "skews": args.skew_list,
                                  "device": args.device},
                       "torch": torch.__version__, "nccl": nccl, "gpu": torch.cuda.get_device_name(device) if cuda else None,
                       "ld_preload": os.environ.get("LD_PRELOAD", ""), "libraries": loaded_libraries(),
                       "env": {k: v for k, v in os.environ.items() if k.startswith(("NCCL_", "BRAID_"))},
                       "results": results}, f, indent=1)
    wrong_total = sum(r["wrong"] for r in results)
    dist.destroy_process_group()
    return 1 if wrong_total else 0


if __name__ == "__main__":
    sys.exit(main())
