#!/usr/bin/env bash
# One-GPU machine (the one-GPU rig), carry .rig gpubundle; braid at 89b800f (its device-wide CUDA
# calls wait for the progress threads first): the copy suite (mapping peers' buffers), the routed
# exchange at 2 ranks (relay scratch growth), and DDP on the default path.
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > "$OUT/gpu.txt"
OUT=$OUT RIG_PREFLIGHT=0 RIG_BUDGET=300 RIG_ROUTE_COLLS="alltoall alltoallv sendrecv" RIG_ROUTE_DYING=0 \
  bash bench/rig/run.sh copy 2 route 2 > "$OUT/rig-console.txt" 2>&1
echo "rig rc=$?"; grep -E "logs,|FAIL|SKIPPED|split calls by|caller time" "$OUT/rig-console.txt" | head -12
(OUT=$OUT/train CASES="ddp-comm-b25 fsdp" WRAPPER=bench/rig/one-gpu-rank.sh RANKS=2 REPS=1 timeout 150 bash bench/train/run.sh) > "$OUT/train-console.txt" 2>&1
echo "train rc=$?"; grep -E "^SUMMARY|done in" "$OUT/train-console.txt" | head -4
rm -rf "$OUT/train"
