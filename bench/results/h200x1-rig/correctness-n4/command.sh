#!/usr/bin/env bash
# One-GPU machine (the one-GPU rig), carry .rig gpubundle. correctness 4 for the collectives the
# forced-split run of ../eager-loading-n4/ had no time for (all_reduce passed there): nccl-tests'
# own check through the drop-in, 4 ranks, every type and operator at 1K, 64K and 4M, every type at
# 256M, every split call split (BRAID_BALANCER=static, BRAID_STATIC_SHARE=0.25).
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > "$OUT/gpu.txt"; nproc >> "$OUT/gpu.txt"
RIG_PREFLIGHT=0 BRAID_BALANCER=static BRAID_STATIC_SHARE=0.25 RIG_BUDGET=570 \
  RIG_COLLS="reduce_scatter all_gather reduce broadcast" bash bench/rig/run.sh correctness 4 > "$OUT/rig-console.txt" 2>&1
echo "rig rc=$?"; grep -E "logs,|^FAIL|SKIP|wrong|rc=[1-9]" "$OUT/rig-console.txt" | head -40
