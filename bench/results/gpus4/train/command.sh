#!/usr/bin/env bash
# A four-GPU machine (nvidia-h100-x4 or nvidia-h200-x4), carry .rig gpubundle, right after
# ../command.sh on the same warm machine: every training case at full scale, one plain/braid pair
# each (bench/train/run.sh; summary.md inside train.tgz).
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0
nvidia-smi -L > "$OUT/gpu.txt"
(OUT=$OUT/train CASES="ddp-comm-b25 ddp-comm-b256 fsdp ddp-compute ddp-comm-compiled fsdp-compiled" REPS=1 TIMEOUT=200 \
  timeout 560 bash bench/train/run.sh) > "$OUT/train-console.txt" 2>&1
echo "train rc=$?"; grep -E "SUMMARY|ratio|equal|FAIL" "$OUT/train-console.txt" | head -40
cd "$OUT" && tar czf train.tgz train train-console.txt && rm -rf train
