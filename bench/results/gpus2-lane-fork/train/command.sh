#!/usr/bin/env bash
# A two-GPU machine, carry .rig gpubundle, right after ../command.sh on the same warm machine:
# DDP (25 and 256 MB buckets) and FSDP2 under torchrun, plain and through braid, one pair each
# (bench/train/run.sh; summary.md inside train.tgz).
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0
nvidia-smi -L > "$OUT/gpu.txt"
(OUT=$OUT/train CASES="${CASES:-ddp-comm-b25 ddp-comm-b256 fsdp}" REPS=${REPS:-1} TIMEOUT=200 \
  timeout 560 bash bench/train/run.sh) > "$OUT/train-console.txt" 2>&1
echo "train rc=$?"; grep -E "SUMMARY|ratio|equal|FAIL" "$OUT/train-console.txt" | head -40
cd "$OUT" && tar czf train.tgz train train-console.txt && rm -rf train
