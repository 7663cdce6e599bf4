#!/usr/bin/env python3
"""PyTorch's own collectives through the drop-in, checked exactly, plus the host time per call.

Launch with torchrun, one process per rank (on one GPU through bench/rig/one-gpu-rank.sh):

    torchrun --nproc_per_node=2 --no-python bench/rig/one-gpu-rank.sh python3 bench/checks/torch_collectives.py

Checks, for several sizes (the large ones are split by braid): all_reduce with SUM, AVG and
PREMUL_SUM (a different factor on every rank, as FSDP's gradient divide factors are), and
reduce_scatter_tensor / all_gather_into_tensor, against values computed here from the inputs.
Then several communicators in one process: two subgroups made by ncclCommSplit (init with a
device_id makes PyTorch split) and the default group, calls interleaved across them. With
TORCH_NCCL_USE_COMM_NONBLOCKING=1 every communicator is a non-blocking one.
Inputs are small integers, so every result is exact in every type tried. Then the host time of
dist.all_reduce (how long the call takes to return; the stream waits, not the thread), median of
many calls, per size. Rank 0 prints one line per check and a JSON summary; exit 1 on any wrong
result.
"""
import hashlib
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist


def premul(factor):
    # PyTorch's PREMUL_SUM: NCCL's ncclRedOpCreatePreMulSum with a host scalar per call.
    return dist._make_nccl_premul_sum(factor)


def inputs(rank, n, dtype, device):
    g = torch.Generator().manual_seed(1000 + rank)
    return torch.randint(-3, 4, (n,), generator=g).to(dtype).to(device)


def main():
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
    torch.cuda.set_device(device)
    # A device_id makes the default communicator eagerly, and new groups split from it.
    dist.init_process_group("nccl", device_id=device)
    rank, world = dist.get_rank(), dist.get_world_size()
    sizes = [int(s) for s in os.environ.get("CHECK_SIZES", "4096,1048576,16777216,67108864").split(",")]
    wrong = 0
    lines = []

    def check(name, got, want, reference_known=True):
        nonlocal wrong
        ok = torch.equal(got.cpu(), want.cpu())
        # The result's bytes, hashed: a plain NCCL run and a braid run must print the same.
        digest = hashlib.sha1(got.cpu().contiguous().view(torch.uint8).numpy().tobytes()).hexdigest()[:16]
        if not ok and not reference_known:
            # Plain NCCL gives the same bits (compare the hash with a plain run's): not counted.
            lines.append(f"diff  {name}: differs from this script's reference under plain NCCL too [{digest}]")
            return
        wrong += 0 if ok else 1
        if not ok:
            diff = (got.double().cpu() - want.double().cpu()).abs()
            lines.append(f"WRONG {name}: {int((diff > 0).sum())} elements, max diff {float(diff.max())} [{digest}]")
        else:
            lines.append(f"ok    {name} [{digest}]")

    for nbytes in sizes:
        for dtype in (torch.float32, torch.bfloat16, torch.float16, torch.float64):
            n = max(world, nbytes // torch.tensor([], dtype=dtype).element_size())
            n -= n % world
            every = [inputs(r, n, dtype, "cpu").double() for r in range(world)]
            mine = inputs(rank, n, dtype, device)
            # SUM
            t = mine.clone()
            dist.all_reduce(t)
            check(f"all_reduce sum {dtype} {nbytes} B", t, sum(every).to(dtype))
            # AVG (world a power of two keeps it exact)
            t = mine.clone()
            dist.all_reduce(t, op=dist.ReduceOp.AVG)
            check(f"all_reduce avg {dtype} {nbytes} B", t, (sum(every) / world).to(dtype))
            # PREMUL_SUM with a factor per rank: 2, -1, 0.5, 4, ...
            factors = [(2.0, -1.0, 0.5, 4.0)[r % 4] for r in range(world)]
            t = mine.clone()
            dist.all_reduce(t, op=premul(factors[rank]))
            # bfloat16 PREMUL_SUM: PyTorch 2.11 with NCCL 2.28 gives other values than the
            # factors times the inputs, without braid too (bench/results/h100x1-rig/torch-checks);
            # there the check is that braid's bits equal plain NCCL's (the hashes).
            known = dtype != torch.bfloat16
            check(f"all_reduce premul_sum {dtype} {nbytes} B", t,
                  sum(f * x for f, x in zip(factors, every)).to(dtype), known)
            # reduce_scatter with PREMUL_SUM, all_gather
            out = torch.empty(n // world, dtype=dtype, device=device)
            dist.reduce_scatter_tensor(out, mine, op=premul(factors[rank]))
            total = sum(f * x for f, x in zip(factors, every)).to(dtype)
            check(f"reduce_scatter premul_sum {dtype} {nbytes} B", out, total[rank * (n // world):(rank + 1) * (n // world)],
                  known)
            gathered = torch.empty(n * world, dtype=dtype, device=device)
            dist.all_gather_into_tensor(gathered, mine)
            check(f"all_gather {dtype} {nbytes} B", gathered, torch.cat(every).to(dtype))
    torch.cuda.synchronize()

    # Several communicators in one process, made by ncclCommSplit: two subgroups over every rank,
    # their calls interleaved with the default group's, at a size braid splits.
    groups = [None, dist.new_group(list(range(world))), dist.new_group(list(reversed(range(world))))]
    n = (16 << 20) // 4
    n -= n % world
    every = [inputs(r, n, torch.float32, "cpu").double() for r in range(world)]
    mine = inputs(rank, n, torch.float32, device)
    for round_ in range(3):
        outs = []
        for g in groups:
            t = mine.clone()
            dist.all_reduce(t, group=g)
            outs.append(t)
        for i, t in enumerate(outs):
            check(f"all_reduce sum float32 {n * 4} B, communicator {i} (round {round_})", t,
                  sum(every).to(torch.float32))
    torch.cuda.synchronize()

    # Host time per call: how long dist.all_reduce takes to return, streams left running.
    host = {}
    for nbytes in [4096, 1 << 20, 16 << 20, 64 << 20, 256 << 20]:
        t = torch.ones(nbytes // 4, device=device)
        for _ in range(3):
            dist.all_reduce(t)
        torch.cuda.synchronize()
        times = []
        for _ in range(int(os.environ.get("HOST_CALLS", 20))):
            start = time.perf_counter()
            dist.all_reduce(t)
            times.append((time.perf_counter() - start) * 1e6)
        torch.cuda.synchronize()
        host[nbytes] = statistics.median(times)
    dist.barrier()
    if rank == 0:
        for line in lines:
            print(line)
        print(json.dumps({"world": world, "wrong": wrong, "checks": len(lines),
                          "nonblocking": os.environ.get("TORCH_NCCL_USE_COMM_NONBLOCKING", "0"),
                          "host_us_median": host, "preload": os.environ.get("LD_PRELOAD", "")}))
    dist.destroy_process_group()
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()
