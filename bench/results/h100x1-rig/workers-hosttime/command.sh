#!/usr/bin/env bash
# One-GPU machine (the one-GPU rig), carry .rig gpubundle. What each CUDA call of a split call
# costs the caller (host_cost_probe, with the join's variants), then host time per call at 4 and
# 2 ranks with the engine's workers leaving two cores per rank (SUITES: what ran is on the first
# line of rig-console.txt).
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > "$OUT/gpu.txt"; nproc >> "$OUT/gpu.txt"
timeout 60 gpubundle/host_cost_probe 20000 > "$OUT/host_cost_probe.txt" 2>&1; cat "$OUT/host_cost_probe.txt"
# INIT lines only (each rank says its worker threads once); nothing is logged per call.
BRAID_DEBUG=INFO BRAID_DEBUG_SUBSYS=INIT OUT=$OUT RIG_PREFLIGHT=0 RIG_BUDGET=${RIG_BUDGET:-520} bash bench/rig/run.sh ${SUITES:-hosttime 4 hosttime 2} > "$OUT/rig-console.txt" 2>&1
echo "rig rc=$?"; grep -E "OVER|sizes over|within|logs,|FAIL|SKIPPED|rounds\)|^==|worker threads" "$OUT/rig-console.txt" | head -80
