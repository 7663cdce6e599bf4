#!/usr/bin/env bash
# One-GPU machine (the one-GPU rig), carry .rig gpubundle. correctness 4 on this session's code with
# every split call split (BRAID_BALANCER=static, BRAID_STATIC_SHARE=0.25): nccl-tests' own check,
# every type and operator at 1K, 64K and 4M, every type at 256M.
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > "$OUT/gpu.txt"; nproc >> "$OUT/gpu.txt"
export RIG_PREFLIGHT=0
OUT=$OUT/static-n4 BRAID_BALANCER=static BRAID_STATIC_SHARE=0.25 RIG_BUDGET=540 bash bench/rig/run.sh correctness 4 \
  > "$OUT/rig-console-n4.txt" 2>&1
echo "rig rc=$?"; grep -E "^FAIL|logs,|SKIPPED|^==|rc=[1-9]" "$OUT/rig-console-n4.txt" | head -40
mv "$OUT/static-n4/rig-logs.tar.gz" "$OUT/static-n4-rig-logs.tar.gz"; mv "$OUT/static-n4/summary.txt" "$OUT/summary-n4.txt"
rm -rf "${OUT:?}/static-n4"; mv "$OUT/gpu.txt" "$OUT/gpu-n4.txt"
