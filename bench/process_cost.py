#!/usr/bin/env python3
"""What braid's drop-in costs a PyTorch process: GPU memory, start-up, host memory.

Runs a job of N processes (a GPU each, as torchrun) plain and with libbraid.so preloaded,
alternating, `--pairs` times, and reports per mode, for rank 0 and the worst rank:
- GPU memory in use (cudaMemGetInfo: total - free) at the first all_reduce, and after the
  application's first kernels (an nn.Linear forward and backward, an optimizer step);
- seconds from the launch to the first all_reduce done;
- peak RSS after `--calls` more all_reduces of `--mb` MB;
- the CUDA_MODULE_LOADING the process saw (unset stays unset: braid leaves it alone).
The first all_reduce is `--mb` MB (64 by default: above braid's split threshold, so the drop-in
makes whatever it makes for a communicator). Run on the GPU machine:

    python3 bench/process_cost.py --ranks 4 --braid gpubundle/lib/libbraid.so [--pairs 2] [--json out.json]
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ranks as launcher  # noqa: E402


def child(args):
    t0 = args.t0
    import resource
    import torch
    import torch.distributed as dist
    rank, _, dev = launcher.init_rank()
    x = torch.ones(args.mb << 18, device=dev)  # mb MB of float32
    dist.all_reduce(x)
    torch.cuda.synchronize()
    t_first = time.time() - t0
    free, total = torch.cuda.mem_get_info()
    at_first = (total - free) >> 20
    ok = bool(torch.all(x == dist.get_world_size()).item())
    model = torch.nn.Sequential(torch.nn.Linear(4096, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 4096)).to(dev)
    opt = torch.optim.AdamW(model.parameters())
    loss = model(torch.randn(64, 4096, device=dev)).pow(2).mean()
    loss.backward()
    opt.step()
    torch.cuda.synchronize()
    free, total = torch.cuda.mem_get_info()
    after_kernels = (total - free) >> 20
    for _ in range(args.calls):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10  # KiB -> MiB
    print(json.dumps({"rank": rank, "first_allreduce_s": t_first, "gpu_mib_at_first_allreduce": at_first,
                      "gpu_mib_after_kernels": after_kernels, "peak_rss_mib": peak_rss, "exact": ok,
                      "module_loading": os.environ.get("CUDA_MODULE_LOADING", "unset")}), flush=True)
    dist.destroy_process_group()


KEYS = ["first_allreduce_s", "gpu_mib_at_first_allreduce", "gpu_mib_after_kernels", "peak_rss_mib"]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    launcher.add_job_arguments(p, timeout=300)
    p.add_argument("--mb", type=int, default=64)
    p.add_argument("--calls", type=int, default=50)
    args = p.parse_args()
    if args.child:
        return child(args)
    runs = launcher.alternate_pairs(__file__, "cost", ["--mb", str(args.mb), "--calls", str(args.calls)], args)
    summary = {}
    for mode in ("plain", "braid"):
        good = [r for r in runs if r["mode"] == mode and r["status"] == "ok" and all(r["ranks"])]
        summary[mode] = {k: {"rank0": launcher.median([r["ranks"][0][k] for r in good]),
                             "worst": launcher.median([max(x[k] for x in r["ranks"]) for r in good])} for k in KEYS}
        summary[mode]["runs_ok"] = len(good)
        summary[mode]["exact"] = all(x["exact"] for r in good for x in r["ranks"])
        summary[mode]["module_loading"] = sorted({x["module_loading"] for r in good for x in r["ranks"]})
    print(f"\n{args.ranks} ranks, medians of {args.pairs} pairs (rank 0 / worst rank):")
    print(f"{'':32}{'plain':>20}{'braid':>20}{'braid - plain':>20}")
    for k in KEYS:
        row = [summary[m][k] for m in ("plain", "braid")]
        if None in (row[0]["rank0"], row[1]["rank0"]):
            print(f"{k:32}{'(no run)':>20}")
            continue
        cells = [f"{c['rank0']:.2f} / {c['worst']:.2f}" for c in row]
        delta = f"{row[1]['rank0'] - row[0]['rank0']:+.2f} / {row[1]['worst'] - row[0]['worst']:+.2f}"
        print(f"{k:32}{cells[0]:>20}{cells[1]:>20}{delta:>20}")
    for m in ("plain", "braid"):
        print(f"{m}: {summary[m]['runs_ok']} runs ok, exact {summary[m]['exact']}, "
              f"CUDA_MODULE_LOADING {summary[m]['module_loading']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"ranks": args.ranks, "mb": args.mb, "calls": args.calls, "runs": runs, "summary": summary}, f,
                      indent=1)
    ok = all(r["status"] == "ok" for r in runs)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
