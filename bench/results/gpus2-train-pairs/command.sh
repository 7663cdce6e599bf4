#!/usr/bin/env bash
# A two-GPU machine, carry .rig gpubundle. Real training through the drop-in on this change's
# library (a meeting point of the copy engines in one driver call; the PCIe share off below
# CUDA's default hardware queues): bench/train/run.sh, plain and braid alternating, two pairs per
# case (DDP with 25 and 256 MB buckets, FSDP2, a compute-bound DDP), losses checked step by step.
cd "$(dirname "$0")/../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0
{ nvidia-smi -L; nproc; } > "$OUT/gpu.txt" 2>&1
(OUT=$OUT REPS=2 TIMEOUT=120 timeout 520 bash bench/train/run.sh) > "$OUT/train-console.txt" 2>&1
echo "== train rc=$? ($SECONDS s)"; grep -E "^SUMMARY|timed out|ratio|median" "$OUT/train-console.txt" | head -30
cat "$OUT/train/summary.md" 2>/dev/null
cd "$OUT" && tar czf logs.tgz --exclude=logs.tgz train && rm -rf train
