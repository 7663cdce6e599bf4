#!/usr/bin/env bash
# One-GPU machine, carry .rig gpubundle. (1) host_block_probe, lazy (default) and eager module
# loading: which CUDA calls on one thread stop another thread's queueing while a stream waits on
# a host word. (2) The DDP run that hangs with BRAID_NVLINK_ON_LANE=1, now with
# CUDA_MODULE_LOADING=EAGER: if lazy loading is the cause, it passes.
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > "$OUT/gpu.txt"
for mode in lazy eager; do
  ( [ $mode = eager ] && export CUDA_MODULE_LOADING=EAGER
    timeout 100 gpubundle/host_block_probe; echo "probe rc=$?" ) > "$OUT/host_block.$mode.txt" 2>&1
  cat "$OUT/host_block.$mode.txt"
done
(export CUDA_MODULE_LOADING=EAGER BRAID_WATCH_STACKS=1 BRAID_TIMEOUT=15; VARIANTS=lane OUT=$OUT/ddp timeout 200 \
  bash bench/results/h100x1-rig/lane-ddp-hang/command.sh) > "$OUT/ddp-console.txt" 2>&1
grep -E "SUMMARY|done in" "$OUT/ddp-console.txt"
cd "$OUT" && tar czf logs.tgz ddp ddp-console.txt && rm -rf ddp ddp-console.txt
