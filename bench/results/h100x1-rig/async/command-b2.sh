#!/usr/bin/env bash
# The asynchronous split call: nccl-tests' correctness matrix at 4 ranks and its launch modes at 2,
# then real training (DDP 25/256 MB buckets, FSDP2, compute-bound) plain against braid.
set -u
cd "$(dirname "$0")/../../../.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
RIG_PREFLIGHT=0 RIG_BUDGET=380 bash bench/rig/run.sh correctness 4 modes 2 > "$OUT/rig-console.txt" 2>&1
grep -E "^(FAIL|==)" "$OUT/rig-console.txt" | tail -12
WRAPPER=bench/rig/one-gpu-rank.sh RANKS=2 REPS=1 timeout 170 bash bench/train/run.sh > "$OUT/train-console.txt" 2>&1
tail -30 "$OUT/train-console.txt"
tar -czf "$OUT/train.tgz" -C "$OUT" train 2>/dev/null && rm -rf "$OUT/train"
