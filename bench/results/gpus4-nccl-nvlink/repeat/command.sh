#!/usr/bin/env bash
# The same warm 4-GPU machine right after ../command.sh: the two cases braid lost there, two
# plain/braid pairs each.
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}; export NCCL_NVLS_ENABLE=0
nvidia-smi -L > "$OUT/gpu.txt"
(OUT=$OUT/train CASES="fsdp ddp-comm-compiled" REPS=2 TIMEOUT=200 timeout 300 bash bench/train/run.sh) > "$OUT/train-console.txt" 2>&1
echo "train rc=$?"; grep -E "^SUMMARY" "$OUT/train-console.txt" | head
cd "$OUT" && tar czf train.tgz train train-console.txt && rm -rf train
