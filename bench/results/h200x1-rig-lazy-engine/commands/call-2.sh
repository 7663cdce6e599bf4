#!/usr/bin/env bash
# Session of 2026-11-29 (2), one H200 as the rig. (1) shim_pcie_engine_gpu_test, now a process per
# rank so that one GPU runs it: HyLink's balancer (no engine) and a static share (engine made).
# (2) The mixed run again with braid's INIT/BALANCE log (did braid split, when was the engine made),
# 2 and 4 rig ranks. (3) Issue 43's small /dev/shm through the drop-in, lazy loading, at the sizes
# where NCCL itself runs on the rig (its proxy needs ~34 MB of /dev/shm per rank) and at 8 MiB.
set -u
cd "$(dirname "$0")/../../../.."  # the repository root
source bench/gpu_env.sh
export NCCL_NVLS_ENABLE=0
unset CUDA_MODULE_LOADING
L=$OUT/logs; mkdir -p $L; date
echo "== pcie engine test"
timeout 150 gpubundle/shim_pcie_engine_gpu_test > $L/pcie-engine-hylink.log 2>&1; echo "hylink rc=$?"; grep -E "rank [0-9]:|PASSED|FAILED|SKIPPED" $L/pcie-engine-hylink.log | head -6
BRAID_BALANCER=static BRAID_STATIC_SHARE=0.25 BRAID_PCIE_ENGINE_EXPECTED=1 timeout 150 gpubundle/shim_pcie_engine_gpu_test > $L/pcie-engine-static.log 2>&1; echo "static rc=$?"; grep -E "rank [0-9]:|PASSED|FAILED|SKIPPED" $L/pcie-engine-static.log | head -6
date
echo "== mixed with braid's log"
for n in 2 4; do
  BRAID_DEBUG=INFO BRAID_DEBUG_SUBSYS=INIT,BALANCE timeout 200 python3 bench/mixed_collectives.py --ranks $n --calls 1000 --max-mb 16 --pairs 1 --timeout 150 \
    --logs $L/mixed$n --json $L/mixed$n.json > $L/mixed$n.txt 2>&1; echo "mixed $n rc=$?"
  tail -4 $L/mixed$n.txt | cut -c1-200
  for f in $L/mixed$n/mixed.n$n.braid.0.rank0.log; do
    echo "  split calls: $(grep -c 'BALANCE' $f) BALANCE lines; first PCIe share: $(grep 'is the first with a PCIe share' $f | head -2 | cut -c1-220)"
  done
done
date
echo "== small /dev/shm"
OUT=$OUT/prep RIG_PREFLIGHT=0 RIG_BUDGET=40 bash bench/rig/run.sh nosuch > /dev/null 2>&1   # unpacks the rig
export MPI_HOME=/tmp/rig/mpich PATH=/tmp/rig/mpich/bin:$PATH MPIR_CVAR_ENABLE_GPU=0
export LD_LIBRARY_PATH=$MPI_HOME/lib/mpich:$MPI_HOME/lib:$LD_LIBRARY_PATH
nt=/tmp/rig/nccl-tests-mpi
one() {  # how shm-size ranks coll [extra env...]
  local how=$1 size=$2 n=$3 c=$4; shift 4
  local log=$L/shm-$how-$size-n$n-$c.log pre=
  [[ $how == plain ]] || pre="-genv LD_PRELOAD $PWD/gpubundle/lib/libbraid.so -genv BRAID_SPLIT_MIN_BYTES 1048576"
  timeout 100 unshare -m bash -c "mount -t tmpfs -o size=$size tmpfs /dev/shm && df -h /dev/shm | tail -1 && \
    mpiexec -n $n $pre $* bench/rig/one-gpu-rank.sh $nt/${c}_perf -b 1M -e 64M -f 4 -n 2 -w 1 -c 1 -T 60" \
    > "$log" 2>&1
  local rc=$?
  echo "$how shm=$size n=$n $c $* rc=$rc rows=$(grep -cE '^ +[0-9]+ ' "$log") wrong=$(grep -E '^ +[0-9]+ ' "$log" | awk '{w+=$9+$NF} END {print w+0}')"
  grep -h "BRAID WARN\|Bus error\|NCCL WARN" "$log" | sed 's/^[^ ]* [^ ]* //' | sort -u | head -3 | cut -c1-400
}
for c in all_reduce all_gather; do
  one plain 72m 2 $c; one braid 72m 2 $c
  one braid 160m 2 $c -genv BRAID_BALANCER static -genv BRAID_STATIC_SHARE 0.25
  one plain 136m 4 $c; one braid 136m 4 $c
  one braid 320m 4 $c -genv BRAID_BALANCER static -genv BRAID_STATIC_SHARE 0.25
done
one braid 8m 2 all_reduce; one braid 64m 4 all_gather
date
cd $OUT && rm -rf prep && tar czf logs.tgz logs && rm -rf logs
