#!/usr/bin/env bash
# One-GPU machine (the one-GPU rig), carry .rig gpubundle. Calls captured in CUDA graphs on braid's
# NVLink path (rig suite graph), host time per call, nccl-tests launch modes and faults at 4 ranks
# (SUITES: what ran is on the first line of rig-console.txt).
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > "$OUT/gpu.txt"
OUT=$OUT RIG_PREFLIGHT=0 RIG_BUDGET=${RIG_BUDGET:-560} bash bench/rig/run.sh ${SUITES:-graph 4 modes 4 faults 4} > "$OUT/rig-console.txt" 2>&1
echo "rig rc=$?"; grep -E "OVER|sizes over|within|logs,|FAIL|SKIPPED|rounds\)|^==|graph|wrong|#" "$OUT/rig-console.txt" | head -80
