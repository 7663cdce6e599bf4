#!/usr/bin/env bash
# One-GPU machine (the one-GPU rig), carry .rig gpubundle. Host time per call at 4 and 2 ranks, 2
# rounds each, nccl-tests -C 1 (a loop of 30 calls' mean) and gpubundle/host_time_probe (each call
# timed alone: the median of 30), plain and braid alternating, with BRAID_CALLER_PROFILE=1 (its
# phases' medians now). settings() reads without a lock on this build.
cd "$(dirname "$0")/../../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > "$OUT/gpu.txt"; nproc >> "$OUT/gpu.txt"
export BRAID_DEBUG=INFO BRAID_DEBUG_SUBSYS=INIT BRAID_CALLER_PROFILE=1 RIG_PREFLIGHT=0
{ OUT=$OUT/n4 RIG_HOSTTIME_ROUNDS=2 RIG_BUDGET=420 bash bench/rig/run.sh hosttime 4
  OUT=$OUT/n2 RIG_HOSTTIME_ROUNDS=2 RIG_BUDGET=140 bash bench/rig/run.sh hosttime 2; } > "$OUT/rig-console.txt" 2>&1
echo "rig rc=$?"; grep -E "OVER|sizes over|logs,|FAIL|SKIPPED|rounds\)|^==|wrong" "$OUT/rig-console.txt" | head -90
for d in n4 n2; do
  tar -xzf "$OUT/$d/rig-logs.tar.gz" -O 2>/dev/null | grep -h "split calls" | sed "s/^/$d: /" >> "$OUT/profiles.txt"
  mv "$OUT/$d/rig-logs.tar.gz" "$OUT/$d-rig-logs.tar.gz"; { echo "== $d"; cat "$OUT/$d/summary.txt"; } >> "$OUT/summaries.txt"; rm -rf "${OUT:?}/$d"
done
head -c 5000 "$OUT/profiles.txt"
