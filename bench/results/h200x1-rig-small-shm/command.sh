#!/usr/bin/env bash
# nvidia-h200 (one GPU, the rig), carry .rig gpubundle. Issue 43's small /dev/shm through the
# drop-in: a private mount namespace whose /dev/shm is a tmpfs of 8 MiB or 64 MiB (docker's
# default), nccl-tests all_reduce and all_gather -c 1 at 2 and 4 ranks on the rig, braid's PCIe path
# admitted (CUDA_MODULE_LOADING=EAGER: under lazy loading braid makes nothing here), its staging
# lowered to fit 64 MiB for one variant. Every log: #wrong, rc, and braid's WARN lines.
cd "$(dirname "$0")/../../.." || exit 2
source bench/gpu_env.sh
OUT=$OUT/prep RIG_PREFLIGHT=0 RIG_BUDGET=40 bash bench/rig/run.sh nosuch > /dev/null 2>&1   # unpacks the rig
export MPI_HOME=/tmp/rig/mpich PATH=/tmp/rig/mpich/bin:$PATH MPIR_CVAR_ENABLE_GPU=0
export LD_LIBRARY_PATH=$MPI_HOME/lib/mpich:$MPI_HOME/lib:$LD_LIBRARY_PATH
nt=/tmp/rig/nccl-tests-mpi; mkdir -p "$OUT/logs"
one() {  # shm-size ranks coll [extra env...]
  local size=$1 n=$2 c=$3; shift 3
  local log=$OUT/logs/shm$size-n$n-$c${1:+-staged}.log
  timeout 120 unshare -m bash -c "mount -t tmpfs -o size=$size tmpfs /dev/shm && df -h /dev/shm | tail -1 && \
    mpiexec -n $n -genv LD_PRELOAD $PWD/gpubundle/lib/libbraid.so -genv CUDA_MODULE_LOADING EAGER \
      -genv BRAID_SPLIT_MIN_BYTES 1048576 $* bench/rig/one-gpu-rank.sh $nt/${c}_perf -b 1M -e 64M -f 4 -n 2 -w 1 -c 1 -T 60" \
    > "$log" 2>&1
  local rc=$?
  echo "shm=$size n=$n $c ${1:-} rc=$rc rows=$(grep -cE '^ +[0-9]+ ' "$log") wrong=$(grep -E '^ +[0-9]+ ' "$log" | awk '{w+=$9+$NF} END {print w+0}')"
  grep -h "BRAID WARN\|Bus error" "$log" | sort -u | head -2 | cut -c1-330
}
for size in 8m 64m; do
  for n in 2 4; do
    for c in all_reduce all_gather; do one $size $n $c; done
  done
done
one 64m 2 all_reduce -genv BRAID_STAGING_BYTES 8388608
cd "$OUT" && rm -rf prep && tar czf logs.tgz logs && rm -rf logs
