#!/usr/bin/env bash
# Session of 2026-11-29 (4), second call: whether a capture holds cudaMemcpyBatchAsync and what
# graphs like braid's bodies cost in GPU memory (graph_cost_probe); pushed AllGathers at 4 rig
# ranks (copy 4) and under the caller's graphs (graph 2), push and push-batch.
set -u
cd "$(dirname "$0")/.."
source bench/gpu_env.sh
export NCCL_NVLS_ENABLE=0
unset CUDA_MODULE_LOADING
date
echo "== graph_cost_probe"
timeout 60 gpubundle/graph_cost_probe 64 2>&1 | tee $OUT/c18-graph-cost.txt
for g in push push-batch; do
  echo "== copy 4, graph 2, BRAID_NVLINK_GATHER=$g"
  RIG_ENV="BRAID_NVLINK_GATHER $g" RIG_PREFLIGHT=0 RIG_BUDGET=255 RIG_HOSTTIME_ROUNDS=0 RIG_COPY_PROBE_SIZES='256M' \
    OUT=$OUT/rig-$g timeout 270 bash bench/rig/run.sh copy 4 graph 2 > $OUT/c18-rig-$g.txt 2>&1; echo "rig $g rc=$?"
  grep -vE "^ok|warn=0$" $OUT/c18-rig-$g.txt | grep -v "caller profile" | tail -22 | cut -c1-300
  date
done
tar -C $OUT -czf $OUT/c18-rig.tgz rig-push rig-push-batch && rm -rf $OUT/rig-push $OUT/rig-push-batch
date
