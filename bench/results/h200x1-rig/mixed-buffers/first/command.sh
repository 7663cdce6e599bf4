#!/usr/bin/env bash
# One-GPU machine (the one-GPU rig), carry .rig gpubundle build-before. Ranks passing buffers of
# different kinds to one collective (gpubundle/shim_mixed_buffers_gpu: rank 0 pinned host memory,
# the others device memory, every collective braid splits, each result checked exactly):
#  1. before: the libbraid.so of daff472 (build-before/), every split call split, plain NCCL
#     beside it (the program's own check of itself); a hang is cut at 60 s;
#  2. after: braid staging the buffers it cannot take, every split call split, 2 ranks;
#  3. after, default settings, 2 ranks; 4. after, every split call split, 4 ranks, in the time left.
cd "$(dirname "$0")/../../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > "$OUT/gpu.txt"; nproc >> "$OUT/gpu.txt"
rig() {  # name, budget, extra env..., -- suites...
  local name=$1 budget=$2; shift 2
  local envs=(); while [[ $1 != -- ]]; do envs+=("$1"); shift; done; shift
  (env "${envs[@]}" OUT=$OUT/$name RIG_PREFLIGHT=0 RIG_PACK=0 RIG_BUDGET=$budget bash bench/rig/run.sh "$@") \
    > "$OUT/$name-console.txt" 2>&1
  echo "$name rc=$? at ${SECONDS}s"; grep -hE "mixed buffers:|stages a split" "$OUT/$name"/mixed/*.log | sed 's/^.*BRAID INFO //' | sort | uniq -c
}
forced=(BRAID_TIMEOUT=10 BRAID_BALANCER=static BRAID_STATIC_SHARE=0.25)
rig before 140 "${forced[@]}" RIG_BRAID_SO=$PWD/build-before/libbraid.so RIG_MIXED_LIMIT=60 -- mixed 2
rig after-forced 100 "${forced[@]}" RIG_MIXED_HOW=braid -- mixed 2
rig after-default 100 BRAID_TIMEOUT=10 RIG_MIXED_HOW=braid -- mixed 2
left=$((400 - SECONDS)); ((left > 60)) && rig after-forced-n4 "$left" "${forced[@]}" RIG_MIXED_HOW=braid -- mixed 4
cd "$OUT" && tar czf logs.tgz before after-* && rm -rf before after-*
