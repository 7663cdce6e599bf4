#!/usr/bin/env bash
# One-GPU machine (the one-GPU rig), carry .rig gpubundle. Host time per call where every split
# call hands braid's PCIe share to the progress thread (BRAID_BALANCER=static,
# BRAID_STATIC_SHARE=0.25), with braid's threads giving way to the caller's split calls
# (BRAID_CALLER_FIRST_US=20, the default) and without (0). Each call timed alone
# (gpubundle/host_time_probe), plain NCCL and braid alternating within each run, with
# BRAID_CALLER_PROFILE=1: 2 ranks 3 rounds each way, then 4 ranks 2 rounds with and 1 without.
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > "$OUT/gpu.txt"; nproc >> "$OUT/gpu.txt"
export RIG_PREFLIGHT=0 RIG_HOSTTIME_TOOLS=probe BRAID_BALANCER=static BRAID_STATIC_SHARE=0.25
export BRAID_DEBUG=INFO BRAID_DEBUG_SUBSYS=INIT BRAID_CALLER_PROFILE=1
runs=("n2-first20 2 3 20 110" "n2-first0 2 3 0 110" "n4-first20 4 2 20 230" "n4-first0 4 1 0 120")
for spec in "${runs[@]}"; do
  read -r name n rounds us budget <<< "$spec"
  echo "== $name"
  BRAID_CALLER_FIRST_US=$us OUT=$OUT/$name RIG_HOSTTIME_ROUNDS=$rounds RIG_BUDGET=$budget bash bench/rig/run.sh hosttime "$n"
done > "$OUT/rig-console.txt" 2>&1
echo "rig rc=$?"; grep -E "^== n|OVER|sizes over|logs,|FAIL|SKIPPED|rounds\)|rc=[1-9]" "$OUT/rig-console.txt" | head -120
for spec in "${runs[@]}"; do
  read -r d _ <<< "$spec"
  [[ -d $OUT/$d ]] || continue
  tar -xzf "$OUT/$d/rig-logs.tar.gz" -O 2>/dev/null | grep -h "split calls" | sed "s/^/$d: /" >> "$OUT/profiles.txt"
  mv "$OUT/$d/rig-logs.tar.gz" "$OUT/$d-rig-logs.tar.gz"; { echo "== $d"; cat "$OUT/$d/summary.txt"; } >> "$OUT/summaries.txt"; rm -rf "${OUT:?}/$d"
done
head -c 2500 "$OUT/profiles.txt"
