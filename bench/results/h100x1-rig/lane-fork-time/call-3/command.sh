#!/usr/bin/env bash
# One-GPU machine (the one-GPU rig), carry .rig gpubundle; the code of call-2 (main). More rounds for
# medians that single spiking rounds move less: host time per call at 2 ranks, 5 rounds, then at 4
# ranks, 3 rounds (pooled with call-2's 3 in ../README.md: summarize.py over both folders' logs).
cd "$(dirname "$0")/../../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > "$OUT/gpu.txt"; nproc >> "$OUT/gpu.txt"
export BRAID_DEBUG=INFO BRAID_DEBUG_SUBSYS=INIT RIG_PREFLIGHT=0
{ OUT=$OUT/n2 RIG_HOSTTIME_ROUNDS=5 RIG_BUDGET=200 bash bench/rig/run.sh hosttime 2
  OUT=$OUT/n4 RIG_HOSTTIME_ROUNDS=3 RIG_BUDGET=380 bash bench/rig/run.sh hosttime 4; } > "$OUT/rig-console.txt" 2>&1
echo "rig rc=$?"; grep -E "OVER|sizes over|logs,|FAIL|SKIPPED|rounds\)|^==" "$OUT/rig-console.txt" | head -60
for n in n2 n4; do mv "$OUT/$n/rig-logs.tar.gz" "$OUT/$n-rig-logs.tar.gz"; mv "$OUT/$n/summary.txt" "$OUT/$n-summary.txt"; rm -rf "${OUT:?}/$n"; done
