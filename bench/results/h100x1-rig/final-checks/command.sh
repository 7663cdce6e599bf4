#!/usr/bin/env bash
# One-GPU machine (the one-GPU rig), carry .rig gpubundle. nccl-tests' own check on the code of this
# session: correctness 2 (every type and operator, 1K-4M, and 256M) and modes 2 with every split
# call really split (BRAID_BALANCER=static, BRAID_STATIC_SHARE=0.25: on the rig the learned split
# hands braid's PCIe path nothing after a communicator's first timed calls); then, with default
# settings, faults 4, faults 2 and dying 2.
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > "$OUT/gpu.txt"; nproc >> "$OUT/gpu.txt"
export RIG_PREFLIGHT=0
{ OUT=$OUT/static BRAID_BALANCER=static BRAID_STATIC_SHARE=0.25 RIG_BUDGET=330 bash bench/rig/run.sh correctness 2 modes 2
  OUT=$OUT/default RIG_BUDGET=200 bash bench/rig/run.sh faults 4 faults 2 dying 2; } > "$OUT/rig-console.txt" 2>&1
echo "rig rc=$?"; grep -E "^FAIL|logs,|SKIPPED|^==|rc=[1-9]" "$OUT/rig-console.txt" | head -60
for d in static default; do
  mv "$OUT/$d/rig-logs.tar.gz" "$OUT/$d-rig-logs.tar.gz"; { echo "== $d"; cat "$OUT/$d/summary.txt"; } >> "$OUT/summaries.txt"; rm -rf "${OUT:?}/$d"
done
