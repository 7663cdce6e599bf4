#!/usr/bin/env bash
# Session of 2026-11-29 (2), one H200 as the rig. (1) Why the mixed run at 4 rig ranks took 1.8x
# plain's loop time through braid (every split call had no PCIe element): the same run with nothing
# split (BRAID_SPLIT_MIN_BYTES=1G) and with braid off (BRAID_DISABLE=1), each thread's CPU time
# logged. (2) Small /dev/shm: the smallest size at which plain NCCL runs on the rig (its proxy's
# /dev/shm pools), then braid there (default and a static PCIe share), with braid's log.
set -u
cd "$(dirname "$0")/../../../.."  # the repository root
source bench/gpu_env.sh
export NCCL_NVLS_ENABLE=0
unset CUDA_MODULE_LOADING
L=$OUT/logs; mkdir -p $L; date
echo "== mixed, 4 rig ranks"
for v in default nosplit disabled; do
  case $v in nosplit) export BRAID_SPLIT_MIN_BYTES=1G;; disabled) export BRAID_DISABLE=1;; esac
  timeout 150 python3 bench/mixed_collectives.py --ranks 4 --calls 1000 --max-mb 16 --pairs 1 --timeout 120 \
    --logs $L/mixed-$v --json $L/mixed-$v.json > $L/mixed-$v.txt 2>&1; echo "mixed $v rc=$?"
  grep "loop_s\|first_100\|wrong el" $L/mixed-$v.txt | cut -c1-200
  unset BRAID_SPLIT_MIN_BYTES BRAID_DISABLE
  python3 - $L/mixed-$v.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["runs"]:
    row = r["ranks"][0] or {}
    print(" ", r["mode"], "rank 0 thread CPU s:", dict(list(row.get("thread_cpu_s", {}).items())[:8]))
PY
done
date
echo "== small /dev/shm"
OUT=$OUT/prep RIG_PREFLIGHT=0 RIG_BUDGET=40 bash bench/rig/run.sh nosuch > /dev/null 2>&1   # unpacks the rig
export MPI_HOME=/tmp/rig/mpich PATH=/tmp/rig/mpich/bin:$PATH MPIR_CVAR_ENABLE_GPU=0
export LD_LIBRARY_PATH=$MPI_HOME/lib/mpich:$MPI_HOME/lib:$LD_LIBRARY_PATH
nt=/tmp/rig/nccl-tests-mpi
one() {  # how shm-size ranks coll [extra env...]; sets rc
  local how=$1 size=$2 n=$3 c=$4; shift 4
  local log=$L/shm-$how-$size-n$n-$c.log pre="-genv NCCL_DEBUG WARN"
  [[ $how == plain ]] || pre="$pre -genv LD_PRELOAD $PWD/gpubundle/lib/libbraid.so -genv BRAID_SPLIT_MIN_BYTES 1048576 -genv BRAID_DEBUG INFO -genv BRAID_DEBUG_SUBSYS INIT"
  timeout 100 unshare -m bash -c "mount -t tmpfs -o size=$size tmpfs /dev/shm && df -h /dev/shm | tail -1 && \
    mpiexec -n $n $pre $* bench/rig/one-gpu-rank.sh $nt/${c}_perf -b 1M -e 64M -f 4 -n 2 -w 1 -c 1 -T 60" \
    > "$log" 2>&1
  rc=$?
  echo "$how shm=$size n=$n $c $* rc=$rc rows=$(grep -cE '^ +[0-9]+ ' "$log") wrong=$(grep -E '^ +[0-9]+ ' "$log" | awk '{w+=$9+$NF} END {print w+0}')"
  grep -h "BRAID WARN\|Bus error\|NCCL WARN\|first with a PCIe\|PCIe share is off" "$log" | sed 's/^[^ ]* [^ ]* //' | sort -u | head -4 | cut -c1-400
}
for n in 2 4; do
  for mib in $((n * 40)) $((n * 48)) $((n * 64)) $((n * 96)); do
    one plain ${mib}m $n all_reduce
    [[ $rc == 0 ]] || continue
    for c in all_reduce all_gather; do
      one braid ${mib}m $n $c
      one braid ${mib}m $n $c -genv BRAID_BALANCER static -genv BRAID_STATIC_SHARE 0.25
    done
    break
  done
done
date
cd $OUT && rm -rf prep && tar czf logs.tgz logs && rm -rf logs
