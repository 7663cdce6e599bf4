#!/usr/bin/env bash
# One-GPU machine (the one-GPU rig), carry .rig gpubundle. Where a split call's host time goes at 4
# ranks against 2: host time per call (-C 1) with BRAID_CALLER_PROFILE=1, whose per-communicator
# line (INIT) splits the calling thread's time into phases; then host_cost_probe (the fork's and the
# join's cost alone and while another thread queues copies); then the modes suite at 2 ranks on
# this code (nccl-tests' own check).
cd "$(dirname "$0")/../../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > "$OUT/gpu.txt"; nproc >> "$OUT/gpu.txt"
gpubundle/host_cost_probe 20000 >> "$OUT/gpu.txt" 2>&1
export BRAID_DEBUG=INFO BRAID_DEBUG_SUBSYS=INIT BRAID_CALLER_PROFILE=1 RIG_PREFLIGHT=0
{ OUT=$OUT/n4 RIG_HOSTTIME_ROUNDS=2 RIG_BUDGET=300 bash bench/rig/run.sh hosttime 4
  OUT=$OUT/n2 RIG_HOSTTIME_ROUNDS=2 RIG_BUDGET=100 bash bench/rig/run.sh hosttime 2
  unset BRAID_CALLER_PROFILE
  OUT=$OUT/modes RIG_BUDGET=150 bash bench/rig/run.sh modes 2; } > "$OUT/rig-console.txt" 2>&1
echo "rig rc=$?"; grep -E "OVER|sizes over|logs,|FAIL|SKIPPED|rounds\)|^==|wrong" "$OUT/rig-console.txt" | head -60
for d in n4 n2 modes; do
  tar -xzf "$OUT/$d/rig-logs.tar.gz" -O 2>/dev/null | grep -h "split calls, caller" | sed "s/^/$d: /" >> "$OUT/profiles.txt"
  mv "$OUT/$d/rig-logs.tar.gz" "$OUT/$d-rig-logs.tar.gz"; { echo "== $d"; cat "$OUT/$d/summary.txt"; } >> "$OUT/summaries.txt"; rm -rf "${OUT:?}/$d"
done
cat "$OUT/gpu.txt"; head -c 6000 "$OUT/profiles.txt"
