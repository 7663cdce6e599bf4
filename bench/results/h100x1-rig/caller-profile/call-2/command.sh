#!/usr/bin/env bash
# One-GPU machine (the one-GPU rig), carry .rig gpubundle. Call 1 found most split calls of this
# suite went to NCCL alone (the split gave braid's paths nothing) and profiled only the others; the
# profile now times every split call from braid's entry (the shim's checks) and says which kind it
# was. Host time per call (-C 1) at 4 and 2 ranks, 2 rounds each, with BRAID_CALLER_PROFILE=1.
cd "$(dirname "$0")/../../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > "$OUT/gpu.txt"; nproc >> "$OUT/gpu.txt"
export BRAID_DEBUG=INFO BRAID_DEBUG_SUBSYS=INIT BRAID_CALLER_PROFILE=1 RIG_PREFLIGHT=0
{ OUT=$OUT/n4 RIG_HOSTTIME_ROUNDS=2 RIG_BUDGET=300 bash bench/rig/run.sh hosttime 4
  OUT=$OUT/n2 RIG_HOSTTIME_ROUNDS=2 RIG_BUDGET=100 bash bench/rig/run.sh hosttime 2; } > "$OUT/rig-console.txt" 2>&1
echo "rig rc=$?"; grep -E "OVER|sizes over|logs,|FAIL|SKIPPED|rounds\)|^==|wrong" "$OUT/rig-console.txt" | head -60
for d in n4 n2; do
  tar -xzf "$OUT/$d/rig-logs.tar.gz" -O 2>/dev/null | grep -h "split calls" | sed "s/^/$d: /" >> "$OUT/profiles.txt"
  mv "$OUT/$d/rig-logs.tar.gz" "$OUT/$d-rig-logs.tar.gz"; { echo "== $d"; cat "$OUT/$d/summary.txt"; } >> "$OUT/summaries.txt"; rm -rf "${OUT:?}/$d"
done
head -c 8000 "$OUT/profiles.txt"
