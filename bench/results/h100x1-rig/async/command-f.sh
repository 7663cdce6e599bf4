#!/usr/bin/env bash
# After the share paths moved behind one interface (multipath::SharePath: NCCL's strided shares,
# the copy engines and the PCIe engine as classes): the 2-rank correctness matrix, AllGather and
# ReduceScatter again with the copy-based NCCL share, and nccl-tests' launch modes at 2 ranks.
set -u
cd "$(dirname "$0")/../../../.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
RIG_PREFLIGHT=0 RIG_BUDGET=250 bash bench/rig/run.sh correctness 2 > "$OUT/rig-console.txt" 2>&1
grep -E "^(FAIL|==)" "$OUT/rig-console.txt" | tail -8
OUT=$OUT/copy-share BRAID_SPLIT_NCCL_SHARE=copy RIG_COLLS="all_gather reduce_scatter" RIG_PREFLIGHT=0 RIG_BUDGET=90 \
  bash bench/rig/run.sh correctness 2 > "$OUT/rig-console-copy-share.txt" 2>&1
grep -E "^(FAIL|==)" "$OUT/rig-console-copy-share.txt" | tail -8
OUT=$OUT/modes RIG_PREFLIGHT=0 RIG_BUDGET=200 bash bench/rig/run.sh modes 2 > "$OUT/rig-console-modes.txt" 2>&1
grep -E "^(FAIL|==)" "$OUT/rig-console-modes.txt" | tail -8
