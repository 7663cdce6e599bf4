#!/usr/bin/env bash
# Session of 2026-11-29 (4), third call: the peer GPU test asserting that pushes happened (and
# not where ranks disagree); graph_cost_probe at 1, 8, 32 and 64 graphs (is the memory per graph
# or one pool?); one nccl-tests all_gather per way at 2 rig ranks, its end-of-path INFO line.
set -u
cd "$(dirname "$0")/.."
source bench/gpu_env.sh
export NCCL_NVLS_ENABLE=0
unset CUDA_MODULE_LOADING
date
timeout 120 gpubundle/peer_allocation_share_gpu_test 2>&1 | tail -15
for k in 1 8 32 64; do timeout 60 gpubundle/graph_cost_probe $k 2>&1 | tail -2; done
mkdir -p /tmp/rig && tar -C /tmp/rig -xJf .rig/rig.tar.xz
rig=${RIG_DIR:-/tmp/rig}
ls $rig >/dev/null 2>&1 || { echo "no rig at $rig"; ls /tmp; }
export LD_LIBRARY_PATH=$rig/mpich/lib/mpich:$rig/mpich/lib:$PWD/gpubundle/lib:$LD_LIBRARY_PATH MPIR_CVAR_ENABLE_GPU=0
for g in pull push push-batch; do
  timeout 90 $rig/mpich/bin/mpiexec -n 2 -genv LD_PRELOAD $PWD/gpubundle/lib/libbraid.so -genv BRAID_NVLINK_PATH copy \
    -genv BRAID_PEER_SAME_GPU 1 -genv BRAID_NVLINK_COPY_MIN_BYTES 1048576 -genv NCCL_CUMEM_ENABLE 0 \
    -genv BRAID_NVLINK_GATHER $g -genv BRAID_DEBUG INFO -genv BRAID_DEBUG_SUBSYS INIT \
    bench/rig/one-gpu-rank.sh $rig/nccl-tests-mpi/all_gather_perf -b 16M -e 256M -f 4 -n 10 -w 2 -c 1 > $OUT/ag_$g.log 2>&1
  echo "$g rc=$?: $(grep -E '^ +[0-9]+ ' $OUT/ag_$g.log | awk '{s+=$9+$13} END {print "wrong", s, "rows", NR}'); $(grep -h 'AllGathers pushed' $OUT/ag_$g.log | sed -E 's/.*: //' | head -2 | tr '\n' '|')"
done
date
