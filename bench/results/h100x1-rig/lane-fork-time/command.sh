#!/usr/bin/env bash
# One-GPU machine (the one-GPU rig), carry .rig gpubundle. Host time per call at 4 and 2 ranks
# once the progress thread times the fork (the caller's fork is an untimed event), a kind's first
# 4 split calls are timed (was 8), and each rank's workers leave three cores to the caller, the
# progress thread and NCCL's proxy thread (16 cores: 1 worker per rank at 4 ranks, 5 at 2).
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > "$OUT/gpu.txt"; nproc >> "$OUT/gpu.txt"
# INIT lines only (each rank says its worker threads once); nothing is logged per call.
BRAID_DEBUG=INFO BRAID_DEBUG_SUBSYS=INIT OUT=$OUT RIG_PREFLIGHT=0 RIG_BUDGET=${RIG_BUDGET:-560} bash bench/rig/run.sh ${SUITES:-hosttime 4 hosttime 2} > "$OUT/rig-console.txt" 2>&1
echo "rig rc=$?"; grep -E "OVER|sizes over|within|logs,|FAIL|SKIPPED|rounds\)|^==|worker threads" "$OUT/rig-console.txt" | head -80
