#!/usr/bin/env bash
# One-GPU machine (the one-GPU rig), carry .rig gpubundle: braid's default path (PCIe shares on
# the progress thread) at 2 and 4 ranks: host time per call against plain NCCL (3 alternating
# rounds), and nccl-tests' launch modes (-G 1, -R 1, -m 8, -u 1, -y 1, -z 1, ...) with -c 1.
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > "$OUT/gpu.txt"
OUT=$OUT RIG_PREFLIGHT=0 RIG_BUDGET=540 bash bench/rig/run.sh hosttime 2 hosttime 4 modes 2 modes 4 > "$OUT/rig-console.txt" 2>&1
echo "rig rc=$?"; grep -E "OVER|sizes over|within|logs,|FAIL|SKIPPED|rounds\)|^==" "$OUT/rig-console.txt" | head -60
