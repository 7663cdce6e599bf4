#!/usr/bin/env python3
"""Exactness of all_gather, all_reduce and reduce_scatter through braid's drop-in with one
process per GPU (torchrun), the case where braid's own NVLink path (src/peer) maps the peers'
buffers through CUDA IPC: the AllGather's copy engines read them, the AllReduce's kernel reads
and writes them (reduce_scatter's NVLink share is NCCL's: checked beside the PCIe share).

    LD_PRELOAD=libbraid.so python3 -m torch.distributed.run --standalone --nproc_per_node=N \\
        bench/ddp/peer_path_check.py

Sizes straddle the thresholds (below the path's 16 MiB, the path alone, the path plus braid's
PCIe share from 128 MiB; for the reductions the kernel reading the peers and, from 64 MiB, the
copy engines pulling into scratch), in several dtypes; all_gather and reduce_scatter out of place
and in place; then 2 x 80 all_gather and all_reduce calls each on a buffer of its own (more peer
mappings than braid keeps open). Every element is compared with the exact answer (small
integers, exact in every dtype used). Prints PASS or the first mismatches.
"""
import os
import sys

import torch
import torch.distributed as dist

MIB = 1 << 20


def pattern(rank, n, dtype):
    # Small integers: exact in every dtype below, so equality is the check.
    values = (torch.arange(n, device="cuda", dtype=torch.int64) % 61) + 3 * rank
    return values.to(dtype)


def reduced(world, n, dtype, op):
    # Sums of small integers stay exact; the average of two is a multiple of 0.5 (exact too).
    parts = [pattern(q, n, torch.float64) for q in range(world)]
    if op == dist.ReduceOp.MAX:
        want = torch.stack(parts).max(dim=0).values
    else:
        want = torch.stack(parts).sum(dim=0)
        if op == dist.ReduceOp.AVG:
            want = want / world
    return want.to(dtype)


def mismatch(got, want, what):
    """None when equal, else where they first differ."""
    if torch.equal(got, want):
        return None
    bad = (got != want).nonzero()[0].item()
    return f"{what}: element {bad}: {got[bad].item()} != {want[bad].item()}"


def main():
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    failures = []
    cases = 0
    for dtype in (torch.float32, torch.bfloat16, torch.int32):
        esize = torch.tensor([], dtype=dtype).element_size()
        for total_bytes in (8 * MIB, 64 * MIB, 256 * MIB, 1024 * MIB):
            n = total_bytes // esize // world
            for in_place in (False, True):
                out = torch.full((n * world,), -1, device="cuda", dtype=dtype)
                if in_place:
                    inp = out[rank * n:(rank + 1) * n]
                    inp.copy_(pattern(rank, n, dtype))
                else:
                    inp = pattern(rank, n, dtype)
                for _ in range(3):  # the balancer moves the split between calls
                    dist.all_gather_into_tensor(out, inp)
                    cases += 1
                    for q in range(world):
                        m = mismatch(out[q * n:(q + 1) * n], pattern(q, n, dtype),
                                     f"all_gather {dtype} {total_bytes // MIB} MiB in_place={in_place} block {q}")
                        if m:
                            failures.append(m)
                            break
    for dtype in (torch.float32, torch.bfloat16, torch.int32):
        esize = torch.tensor([], dtype=dtype).element_size()
        for total_bytes in (8 * MIB, 64 * MIB, 256 * MIB, 1024 * MIB):
            n = total_bytes // esize
            for op in (dist.ReduceOp.SUM, dist.ReduceOp.MAX, dist.ReduceOp.AVG):
                if op == dist.ReduceOp.AVG and not dtype.is_floating_point:
                    continue
                want = reduced(world, n, dtype, op)
                for _ in range(3):  # the balancer moves the split between calls
                    t = pattern(rank, n, dtype)
                    dist.all_reduce(t, op=op)
                    cases += 1
                    m = mismatch(t, want, f"all_reduce {op} {dtype} {total_bytes // MIB} MiB")
                    if m:
                        failures.append(m)
                        break
                del want
    # reduce_scatter: each rank's output is the sum (max) of every rank's block of the input.
    for dtype in (torch.float32, torch.bfloat16, torch.int32):
        esize = torch.tensor([], dtype=dtype).element_size()
        for total_bytes in (8 * MIB, 64 * MIB, 256 * MIB, 1024 * MIB):
            n = total_bytes // esize // world
            for op in (dist.ReduceOp.SUM, dist.ReduceOp.MAX):
                want = reduced(world, n * world, dtype, op)[rank * n:(rank + 1) * n]
                for in_place in (False, True):
                    for _ in range(2):
                        inp = pattern(rank, n * world, dtype)
                        out = inp[rank * n:(rank + 1) * n] if in_place else torch.empty((n,), device="cuda", dtype=dtype)
                        dist.reduce_scatter_tensor(out, inp, op=op)
                        cases += 1
                        m = mismatch(out, want, f"reduce_scatter {op} {dtype} {total_bytes // MIB} MiB "
                                                f"in_place={in_place}")
                        if m:
                            failures.append(m)
                            break
                del want
    # 80 live send buffers, each its own allocation: more peer mappings than braid keeps open
    # (64), so it closes the ones no longer used; then all are freed and the cache emptied, and
    # the calls go on with new allocations.
    n = 32 * MIB // 4 // world
    for round_ in range(2):
        sends = [pattern(rank, n, torch.float32) + 0 for _ in range(80)]
        out = torch.empty((n * world,), device="cuda", dtype=torch.float32)
        for i, inp in enumerate(sends):
            out.fill_(-1)
            dist.all_gather_into_tensor(out, inp)
            cases += 1
            for q in range(world):
                if not torch.equal(out[q * n:(q + 1) * n], pattern(q, n, torch.float32)):
                    failures.append(f"fresh buffer {i} of round {round_}: block {q} differs")
                    break
        # The same for all_reduce (in place: one mapping per buffer).
        want = reduced(world, n, torch.float32, dist.ReduceOp.SUM)
        bufs = [pattern(rank, n, torch.float32) + 0 for _ in range(80)]
        for i, t in enumerate(bufs):
            dist.all_reduce(t)
            cases += 1
            if not torch.equal(t, want):
                failures.append(f"all_reduce of fresh buffer {i} of round {round_} differs")
        del sends, bufs
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    torch.cuda.synchronize()
    flag = torch.tensor([len(failures)], device="cuda")
    dist.all_reduce(flag)
    if rank == 0:
        print(f"{'PASS' if flag.item() == 0 else 'FAIL'}: {cases} all_gather, all_reduce and reduce_scatter calls per rank, {world} ranks, "
              f"{flag.item()} mismatching")
    for f in failures[:5]:
        print(f"rank {rank}: {f}")
    dist.destroy_process_group()
    return 0 if flag.item() == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
