#!/usr/bin/env bash
# A two-GPU machine (nvidia-h100-x2 or nvidia-h200-x2), carry .rig gpubundle. Current main on a GPU
# per rank: (1) nccl-tests -c 1 in every launch mode and braid's NVLink path (the rig's gpus and
# nvlink suites, plain beside braid, 1K to 256M); (2) host time per call, each call timed alone
# (host_time_probe), all_reduce and all_gather, plain and braid alternating, 2 rounds; (3) the same
# for all_gather with the copy engines' meeting on the progress thread (BRAID_NVLINK_ON_LANE=1).
cd "$(dirname "$0")/../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0
{ nvidia-smi -L; nvidia-smi topo -m; nproc; } > "$OUT/gpu.txt" 2>&1
OUT=$OUT/rig RIG_PREFLIGHT=0 RIG_BUDGET=${RIG_BUDGET:-250} RIG_GPUS_MAX=${RIG_GPUS_MAX:-256M} \
  bash bench/rig/run.sh gpus 2 nvlink 2 > "$OUT/rig-console.txt" 2>&1
echo "rig rc=$?"; grep -E "^== |SKIPPED|logs,|FAIL" "$OUT/rig-console.txt" | head -40
OUT=$OUT/hosttime RIG_PREFLIGHT=0 RIG_BUDGET=${HOSTTIME_BUDGET:-190} RIG_HOSTTIME_PER_GPU=1 RIG_HOSTTIME_TOOLS=probe \
  RIG_HOSTTIME_COLLS="all_reduce all_gather" RIG_HOSTTIME_ROUNDS=2 \
  bash bench/rig/run.sh hosttime 2 > "$OUT/hosttime-console.txt" 2>&1
echo "hosttime rc=$?"; grep -A30 "^== host time" "$OUT/hosttime-console.txt" | head -80
OUT=$OUT/hosttime-lane RIG_PREFLIGHT=0 RIG_BUDGET=${LANE_BUDGET:-80} RIG_HOSTTIME_PER_GPU=1 RIG_HOSTTIME_TOOLS=probe \
  RIG_HOSTTIME_COLLS=all_gather RIG_HOSTTIME_ROUNDS=1 BRAID_NVLINK_ON_LANE=1 \
  bash bench/rig/run.sh hosttime 2 > "$OUT/hosttime-lane-console.txt" 2>&1
echo "hosttime-lane rc=$?"; grep -A30 "^== host time" "$OUT/hosttime-lane-console.txt" | head -40
cd "$OUT" && tar czf logs.tgz rig hosttime hosttime-lane && rm -rf rig hosttime hosttime-lane
