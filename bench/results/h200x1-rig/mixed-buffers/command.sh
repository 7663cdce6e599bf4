#!/usr/bin/env bash
# One-GPU machine (the one-GPU rig), carry .rig gpubundle. Ranks passing buffers of different kinds
# to one collective (gpubundle/shim_mixed_buffers_gpu: rank 0 pinned host memory, the others device
# memory, every collective braid splits, each result checked exactly), with braid staging the
# buffers it cannot take through the communicator's staging memory (after first/, where stream-
# ordered staging memory failed):
#  1. every split call split (BRAID_BALANCER=static, BRAID_STATIC_SHARE=0.25), 2 ranks;
#  2. default settings, 2 ranks;
#  3. every split call split, 4 ranks; 4. rank 1 staging instead of rank 0, 2 ranks, in the time left.
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > "$OUT/gpu.txt"; nproc >> "$OUT/gpu.txt"
rig() {  # name, budget, extra env..., -- suites...
  local name=$1 budget=$2; shift 2
  local envs=(); while [[ $1 != -- ]]; do envs+=("$1"); shift; done; shift
  (env "${envs[@]}" OUT=$OUT/$name RIG_PREFLIGHT=0 RIG_PACK=0 RIG_BUDGET=$budget bash bench/rig/run.sh "$@") \
    > "$OUT/$name-console.txt" 2>&1
  echo "$name rc=$? at ${SECONDS}s"; grep -hE "mixed buffers:|stages a split|WARN" "$OUT/$name"/mixed/*.log | sed 's/^.*BRAID INFO //' | sort | uniq -c | head -12
}
forced=(BRAID_TIMEOUT=10 BRAID_BALANCER=static BRAID_STATIC_SHARE=0.25 RIG_MIXED_HOW=braid RIG_MIXED_LIMIT=90)
rig forced 100 "${forced[@]}" -- mixed 2
rig default 100 BRAID_TIMEOUT=10 RIG_MIXED_HOW=braid RIG_MIXED_LIMIT=90 -- mixed 2
rig forced-n4 100 "${forced[@]}" -- mixed 4
left=$((260 - SECONDS)); ((left > 30)) && rig forced-rank1 "$left" "${forced[@]}" RIG_MIXED_HOST_RANKS=1 -- mixed 2
cd "$OUT" && tar czf logs.tgz forced* default && rm -rf forced forced-n4 forced-rank1 default
