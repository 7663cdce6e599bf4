#!/usr/bin/env bash
# One-GPU machine (the one-GPU rig), carry .rig gpubundle. Host time per call where every split
# call hands braid's PCIe share to the progress thread: BRAID_BALANCER=static with
# BRAID_STATIC_SHARE=0.25 (on the rig the learned split gives braid's paths nothing after a
# communicator's first timed calls, call-2/ and call-3/). Each call timed alone
# (gpubundle/host_time_probe), plain and braid alternating, with BRAID_CALLER_PROFILE=1: 4 ranks
# 2 rounds, 2 ranks 3 rounds.
cd "$(dirname "$0")/../../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > "$OUT/gpu.txt"; nproc >> "$OUT/gpu.txt"
export RIG_PREFLIGHT=0 RIG_HOSTTIME_TOOLS=probe BRAID_BALANCER=static BRAID_STATIC_SHARE=0.25
export BRAID_DEBUG=INFO BRAID_DEBUG_SUBSYS=INIT BRAID_CALLER_PROFILE=1
{ OUT=$OUT/n4 RIG_HOSTTIME_ROUNDS=2 RIG_BUDGET=330 bash bench/rig/run.sh hosttime 4
  OUT=$OUT/n2 RIG_HOSTTIME_ROUNDS=3 RIG_BUDGET=150 bash bench/rig/run.sh hosttime 2; } > "$OUT/rig-console.txt" 2>&1
echo "rig rc=$?"; grep -E "OVER|sizes over|logs,|FAIL|SKIPPED|rounds\)|^==|wrong|rc=" "$OUT/rig-console.txt" | head -90
for d in n4 n2; do
  tar -xzf "$OUT/$d/rig-logs.tar.gz" -O 2>/dev/null | grep -h "split calls" | sed "s/^/$d: /" >> "$OUT/profiles.txt"
  mv "$OUT/$d/rig-logs.tar.gz" "$OUT/$d-rig-logs.tar.gz"; { echo "== $d"; cat "$OUT/$d/summary.txt"; } >> "$OUT/summaries.txt"; rm -rf "${OUT:?}/$d"
done
head -c 3000 "$OUT/profiles.txt"
