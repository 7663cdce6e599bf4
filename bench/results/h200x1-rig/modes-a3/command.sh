#!/usr/bin/env bash
# One-GPU machine (the one-GPU rig), carry .rig gpubundle. nccl-tests' launch modes through braid
# with its own check (-c 1), now with -a 3 among them, on the code as it stands (the review mends
# included):
#  1. modes 2 and modes 4 at default settings;
#  2. modes 2 with every split call split (BRAID_BALANCER=static, BRAID_STATIC_SHARE=0.25), so the
#     -a 3 rows cross braid's PCIe share too, in the time left.
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > "$OUT/gpu.txt"; nproc >> "$OUT/gpu.txt"
rig() {  # name, budget, extra env..., -- suites...
  local name=$1 budget=$2; shift 2
  local envs=(); while [[ $1 != -- ]]; do envs+=("$1"); shift; done; shift
  (env "${envs[@]}" OUT=$OUT/$name RIG_PREFLIGHT=0 RIG_BUDGET=$budget bash bench/rig/run.sh "$@") \
    > "$OUT/$name-console.txt" 2>&1
  echo "$name rc=$? at ${SECONDS}s"; grep -E "logs,|^FAIL|SKIP|wrong" "$OUT/$name-console.txt" | tail -8
  mv "$OUT/$name/rig-logs.tar.gz" "$OUT/$name-logs.tar.gz" 2>/dev/null
  cp "$OUT/$name/summary.txt" "$OUT/$name-summary.txt" 2>/dev/null; rm -rf "${OUT:?}/$name"
}
rig default 380 BRAID_TIMEOUT=10 -- modes 2 modes 4
rig forced-split $((570 - SECONDS)) BRAID_TIMEOUT=10 BRAID_BALANCER=static BRAID_STATIC_SHARE=0.25 -- modes 2
