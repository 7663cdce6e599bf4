#!/usr/bin/env bash
# Session of 2026-11-29 (4), one H200 as the rig: AllGather pushed (BRAID_NVLINK_GATHER=push and
# push-batch) beside pulled; the GPU tests (the peer test now runs every way, in and out of place,
# and ranks that disagree; the forked-rank runner shared by three tests); the copy suite's new
# checked runs with a PCIe share beside the copy engines.
set -u
cd "$(dirname "$0")/.."
source bench/gpu_env.sh
export NCCL_NVLS_ENABLE=0
unset CUDA_MODULE_LOADING
date
echo "== gpu_check tests"
GPU_CHECK_BUDGET=170 OUT=$OUT/c17 timeout 200 bash bench/gpu_check.sh tests > $OUT/c17-tests.txt 2>&1; echo "tests rc=$?"
grep -iE "FAIL|PASS|skip|wrong" $OUT/c17-tests.txt | head -40 | cut -c1-220
tar -C $OUT -czf $OUT/c17-tests.tgz c17 2>/dev/null; rm -rf $OUT/c17
date
for g in pull push push-batch; do
  echo "== copy 2, BRAID_NVLINK_GATHER=$g"
  RIG_ENV="BRAID_NVLINK_GATHER $g" RIG_PREFLIGHT=0 RIG_BUDGET=150 RIG_HOSTTIME_ROUNDS=0 RIG_COPY_PROBE_SIZES='16M 256M' \
    OUT=$OUT/rig-$g timeout 165 bash bench/rig/run.sh copy 2 > $OUT/c17-rig-$g.txt 2>&1; echo "rig $g rc=$?"
  grep -vE "^ok|warn=0$" $OUT/c17-rig-$g.txt | tail -25 | cut -c1-400
  date
done
tar -C $OUT -czf $OUT/c17-rig.tgz rig-pull rig-push rig-push-batch && rm -rf $OUT/rig-pull $OUT/rig-push $OUT/rig-push-batch
date
