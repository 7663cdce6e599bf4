#!/usr/bin/env bash
# The same warm 4-GPU machine right after ../repeat/: ddp-comm-compiled, one plain/braid pair per
# braid setting (BRAID_CUDA_GATE=0, BRAID_DISABLE=1, BRAID_SPLIT_MIN_BYTES=1T), to tell braid's
# cost from the case's own spread.
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}; export NCCL_NVLS_ENABLE=0
for v in BRAID_CUDA_GATE=0 BRAID_DISABLE=1 BRAID_SPLIT_MIN_BYTES=1T; do
  (export "$v"; OUT=$OUT/train-$v CASES="ddp-comm-compiled" REPS=1 TIMEOUT=120 timeout 150 bash bench/train/run.sh) > "$OUT/console-$v.txt" 2>&1
  echo "$v rc=$?"; grep -E "^SUMMARY" "$OUT/console-$v.txt" | head -1
done
cd "$OUT" && tar czf train.tgz train-* console-* && rm -rf train-*
