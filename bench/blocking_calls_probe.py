#!/usr/bin/env python3
"""Split calls in flight while another thread makes CUDA calls that wait for the whole device.

The successor of bench/host_block_probe.cu, through NCCL and the drop-in: each rank's main thread
issues all_reduces of `--mb` MB (large enough that braid splits them when BRAID_SPLIT_MIN_BYTES
allows) back to back, each checked exactly, while a second thread loops over cudaFree(0) of a
fresh 512 MB cudaMalloc, cudaHostAlloc/cudaFreeHost of 64 MB and the first launch of a kernel
(CUDA's default lazy loading loads it then). With a progress thread that queued GPU work, such
calls deadlocked DDP and FSDP2 (docs/MULTIPATH.md, "The deadlock rule"). Reports per rank the
calls done, the blocking calls made meanwhile and the wrong elements; a hang is the launcher's
timeout. On the one-GPU rig every rank uses GPU 0 under a host id of its own.

    python3 bench/blocking_calls_probe.py --ranks 2 --pairs 1 [--braid gpubundle/lib/libbraid.so]
"""
import argparse
import ctypes
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ranks as launcher  # noqa: E402


def cudart():
    import torch  # noqa: F401  (loads the CUDA runtime PyTorch was built with)
    for name in ("libcudart.so.13", "libcudart.so.12", "libcudart.so"):
        try:
            return ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
        except OSError:
            continue
    sys.exit("blocking_calls_probe: no libcudart")


def child(args):
    import torch
    import torch.distributed as dist
    rank, world, dev = launcher.init_rank()
    rt = cudart()
    n = args.mb * (1 << 20) // 4
    x = torch.empty(n, dtype=torch.float32, device=dev)
    base = torch.arange(n, device=dev, dtype=torch.int64) % 1000
    want = (base * world + sum(range(world))).to(torch.float32)
    wrong = torch.zeros((), dtype=torch.int64, device=dev)
    stop = threading.Event()
    blocking = {"calls": 0, "slowest_ms": 0.0}

    def blocker():
        kernels = [torch.special.erfcx, torch.special.i0e, torch.special.ndtri, torch.special.log_ndtr, torch.sinc]
        k = 0
        while not stop.is_set():
            t = time.perf_counter()
            p = ctypes.c_void_p()
            if rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(512 << 20)) == 0:
                rt.cudaFree(p)
            h = ctypes.c_void_p()
            if rt.cudaHostAlloc(ctypes.byref(h), ctypes.c_size_t(64 << 20), 0) == 0:
                rt.cudaFreeHost(h)
            rt.cudaFree(ctypes.c_void_p(0))
            if k < len(kernels):  # a first launch: a lazy module load
                kernels[k](torch.rand(1024, device=dev))
                k += 1
            blocking["calls"] += 1
            blocking["slowest_ms"] = max(blocking["slowest_ms"], (time.perf_counter() - t) * 1e3)
            time.sleep(0.005)

    side = threading.Thread(target=blocker, daemon=True)
    t0 = time.perf_counter()
    side.start()
    for i in range(args.calls):
        x.copy_(base + rank)
        dist.all_reduce(x)
        wrong += (x != want).sum()
    torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    stop.set()
    side.join()
    print(json.dumps({"rank": rank, "calls": args.calls, "seconds": round(seconds, 3), "wrong": int(wrong.item()),
                      "blocking_calls": blocking["calls"], "slowest_blocking_ms": round(blocking["slowest_ms"], 1)}),
          flush=True)
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    launcher.add_job_arguments(parser, timeout=120)
    parser.add_argument("--calls", type=int, default=60)
    parser.add_argument("--mb", type=int, default=256, help="MB per all_reduce")
    args = parser.parse_args()
    if args.child:
        return child(args)
    runs = launcher.alternate_pairs(__file__, "blocking_calls", ["--calls", str(args.calls), "--mb", str(args.mb)], args)
    ok = all(r["status"] == "ok" and all(row and row.get("wrong") == 0 for row in r["ranks"]) for r in runs)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"runs": runs, "ok": ok}, f, indent=1)
    print("blocking_calls_probe:", "no hang, 0 wrong" if ok else "FAILED (a hang, an error or wrong elements)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
