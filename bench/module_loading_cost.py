#!/usr/bin/env python3
"""What eager module loading costs a PyTorch process, against lazy loading, on this GPU.

The drop-in sets CUDA_MODULE_LOADING=EAGER where the application has not chosen
(BRAID_EAGER_MODULE_LOADING, docs/MULTIPATH.md "Lazy module loading"). This runs one small
training step of a transformer-shaped model in a fresh process per run, lazily and eagerly
alternating, and reports per mode: seconds from the process's start to its first step done, the
first step alone, and the GPU memory the process holds (nvidia-smi; the device's used memory where
nvidia-smi cannot see the process) beside what PyTorch's allocator holds. Run on the GPU machine:

    python3 bench/module_loading_cost.py [--reps 3]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

CHILD = r"""
import json, os, subprocess, sys, time
t0 = float(sys.argv[1])
import torch
torch.cuda.init()
dev = torch.device("cuda", 0)
torch.zeros(1, device=dev)
torch.cuda.synchronize()
t_ctx = time.time()
layer = torch.nn.TransformerEncoderLayer(d_model=512, nhead=8, dim_feedforward=2048, batch_first=True).to(dev)
opt = torch.optim.AdamW(layer.parameters())
x = torch.randn(8, 128, 512, device=dev)
t_step0 = time.time()
loss = layer(x).float().pow(2).mean()
loss.backward()
opt.step()
torch.cuda.synchronize()
t_step = time.time()
used = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                      capture_output=True, text=True).stdout
mib = [int(l.split(",")[1]) for l in used.splitlines() if l.split(",")[0].strip() == str(os.getpid())]
free, total = torch.cuda.mem_get_info(dev)
print(json.dumps({"to_context_s": t_ctx - t0, "first_step_s": t_step - t_step0, "to_first_step_s": t_step - t0,
                  "process_gpu_mib": mib[0] if mib else None,
                  "allocator_mib": torch.cuda.memory_reserved(dev) / 2**20, "device_used_mib": (total - free) / 2**20,
                  "mode": os.environ.get("CUDA_MODULE_LOADING")}))
"""


def run_once(mode):
    env = dict(os.environ, CUDA_MODULE_LOADING=mode)
    out = subprocess.run([sys.executable, "-c", CHILD, repr(time.time())], env=env, capture_output=True, text=True,
                         timeout=300)
    if out.returncode != 0:
        raise SystemExit(f"{mode} run failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    rows = {"LAZY": [], "EAGER": []}
    for _ in range(args.reps):
        for mode in rows:
            rows[mode].append(run_once(mode))
            print(json.dumps(rows[mode][-1]), flush=True)
    print("| CUDA_MODULE_LOADING | start to context (s) | first step (s) | start to first step (s) | process GPU MiB "
          "| device used MiB | allocator MiB |")
    print("|---|---|---|---|---|---|---|")
    for mode, runs in rows.items():
        def med(key):
            values = [r[key] for r in runs if r[key] is not None]
            return statistics.median(values) if values else float("nan")
        print(f"| {mode} | {med('to_context_s'):.2f} | {med('first_step_s'):.3f} | {med('to_first_step_s'):.2f} "
              f"| {med('process_gpu_mib'):.0f} | {med('device_used_mib'):.0f} | {med('allocator_mib'):.0f} |")


if __name__ == "__main__":
    main()
