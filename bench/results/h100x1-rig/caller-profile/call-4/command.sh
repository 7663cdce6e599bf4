#!/usr/bin/env bash
# One-GPU machine (the one-GPU rig), carry .rig gpubundle. The code as shipped (no profile): host
# time per call, each call timed alone (gpubundle/host_time_probe, the median of 30 per size),
# plain and braid alternating: 4 ranks 2 rounds, 2 ranks 4 rounds.
cd "$(dirname "$0")/../../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > "$OUT/gpu.txt"; nproc >> "$OUT/gpu.txt"
export RIG_PREFLIGHT=0 RIG_HOSTTIME_TOOLS=probe
{ OUT=$OUT/n4 RIG_HOSTTIME_ROUNDS=2 RIG_BUDGET=360 bash bench/rig/run.sh hosttime 4
  OUT=$OUT/n2 RIG_HOSTTIME_ROUNDS=4 RIG_BUDGET=170 bash bench/rig/run.sh hosttime 2; } > "$OUT/rig-console.txt" 2>&1
echo "rig rc=$?"; grep -E "OVER|sizes over|logs,|FAIL|SKIPPED|rounds\)|^==|wrong|rc=" "$OUT/rig-console.txt" | head -90
for d in n4 n2; do
  mv "$OUT/$d/rig-logs.tar.gz" "$OUT/$d-rig-logs.tar.gz"; { echo "== $d"; cat "$OUT/$d/summary.txt"; } >> "$OUT/summaries.txt"; rm -rf "${OUT:?}/$d"
done
