#!/usr/bin/env bash
# A two-GPU machine, carry .rig gpubundle. Is it the copy engines' per-call meeting on the calling
# thread that slows FSDP2 (0.932 in two pairs, ../gpus2-train-pairs/)? FSDP2 through
# bench/train/run.sh, plain and braid alternating, two pairs: braid's defaults, then braid with its
# AllGathers left to NCCL (BRAID_NVLINK_COPY_MIN_BYTES=1099511627776: no copy-engine AllGather).
cd "$(dirname "$0")/../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0
{ nvidia-smi -L; nproc; } > "$OUT/gpu.txt" 2>&1
(OUT=$OUT/default CASES=fsdp REPS=2 TIMEOUT=90 timeout 150 bash bench/train/run.sh) > "$OUT/default-console.txt" 2>&1
echo "== default rc=$? ($SECONDS s)"; grep -E "^SUMMARY|^run " "$OUT/default-console.txt" | sort -u
(OUT=$OUT/no-copy-ag CASES=fsdp REPS=2 TIMEOUT=90 BRAID_NVLINK_COPY_MIN_BYTES=1099511627776 timeout 150 bash bench/train/run.sh) \
  > "$OUT/no-copy-ag-console.txt" 2>&1
echo "== no-copy-ag rc=$? ($SECONDS s)"; grep -E "^SUMMARY|^run " "$OUT/no-copy-ag-console.txt" | sort -u
cd "$OUT" && tar czf logs.tgz --exclude=logs.tgz $(ls -d */) && rm -rf $(ls -d */)
