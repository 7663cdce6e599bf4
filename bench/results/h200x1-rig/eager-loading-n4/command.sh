#!/usr/bin/env bash
# One-GPU machine (the one-GPU rig), carry .rig gpubundle. The library that asks for eager module
# loading (BRAID_EAGER_MODULE_LOADING) with NCCL's share on the progress thread, every split call
# really split (BRAID_BALANCER=static, BRAID_STATIC_SHARE=0.25; the faults suite sets its own half
# share), at 4 ranks: nccl-tests' own check (modes 4, correctness 4), faults 4, a dying rank at 4
# and at 2, then host time per call at 4 ranks (host_time_probe, each call timed alone, plain and
# braid alternating) for two more rounds.
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > "$OUT/gpu.txt"; nproc >> "$OUT/gpu.txt"
export RIG_PREFLIGHT=0 BRAID_BALANCER=static BRAID_STATIC_SHARE=0.25
runs=("checks 370 modes 4 faults 4 dying 4 dying 2 correctness 4"
      "hosttime 200 hosttime 4")
for spec in "${runs[@]}"; do
  read -r name budget suites <<< "$spec"
  echo "== $name"
  if [[ $name == hosttime ]]; then
    RIG_HOSTTIME_TOOLS=probe RIG_HOSTTIME_ROUNDS=2 OUT=$OUT/$name RIG_BUDGET=$budget bash bench/rig/run.sh $suites
  else
    OUT=$OUT/$name RIG_BUDGET=$budget bash bench/rig/run.sh $suites
  fi
done > "$OUT/rig-console.txt" 2>&1
echo "rig rc=$?"; grep -E "^== [a-z]|OVER|sizes over|logs,|^FAIL|SKIPPED|rounds\)|rc=[1-9]" "$OUT/rig-console.txt" | head -80
for d in checks hosttime; do
  [[ -d $OUT/$d ]] || continue
  mv "$OUT/$d/rig-logs.tar.gz" "$OUT/$d-rig-logs.tar.gz" 2>/dev/null; cp "$OUT/$d/summary.txt" "$OUT/$d-summary.txt" 2>/dev/null
  rm -rf "${OUT:?}/$d"
done
