#!/usr/bin/env bash
# Session of 2026-11-29 (2), one H200 as the rig, lazy loading, every split call given a PCIe share
# (static 0.25), so the PCIe engine is made by the calling thread inside the first training step:
# DDP (25 MB buckets) and FSDP2 at 2 ranks, losses against plain; the blocking-calls probe
# (cudaMalloc 512 MB, cudaFree, cudaHostAlloc on another thread beside split calls) at 4 and 2 ranks.
set -u
cd "$(dirname "$0")/../../../.."  # the repository root
source bench/gpu_env.sh
export NCCL_NVLS_ENABLE=0 BRAID_BALANCER=static BRAID_STATIC_SHARE=0.25 BRAID_TIMEOUT=20
unset CUDA_MODULE_LOADING
O=$OUT/c9; mkdir -p $O; date
WRAPPER=bench/rig/one-gpu-rank.sh RANKS=2 REPS=1 TIMEOUT=90 CASES="ddp-comm-b25 fsdp" \
  BRAID_DEBUG=INFO BRAID_DEBUG_SUBSYS=INIT,BALANCE OUT=$O/t2 timeout 220 bash bench/train/run.sh > $O/train2.txt 2>&1; echo "train2 rc=$?"
grep "^run \|## done" $O/train2.txt | cut -c1-200; grep -A6 "^| case" $O/train2.txt | cut -c1-200 | head -8
grep -h "first with a PCIe share" $O/t2/train/braid.*.log | cut -c1-200 | head -3
date
for n in 4 2; do
  BRAID_DEBUG=INFO BRAID_DEBUG_SUBSYS=INIT,BALANCE timeout 75 python3 bench/blocking_calls_probe.py --ranks $n --pairs 1 --calls 40 --timeout 60 --logs $O/probe --json $O/probe.$n.json > $O/probe.$n.txt 2>&1; echo "probe $n rc=$?"; tail -3 $O/probe.$n.txt | cut -c1-220
  grep -h "first with a PCIe share" $O/probe/*n$n.braid*rank0.log 2>/dev/null | head -1 | cut -c1-200
done
date
tar -C $OUT -czf $OUT/c9.tgz c9 && rm -rf $O
