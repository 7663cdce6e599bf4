#!/usr/bin/env bash
# Session experiment (not committed): is the async hang a shared hardware queue?
set -u
cd "$(dirname "$0")/../../../../.."; root=$PWD  # the repository root
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l
export NCCL_NVLS_ENABLE=0 MPIR_CVAR_ENABLE_GPU=0 NCCL_DEBUG=WARN
rig=/tmp/rig; mkdir -p $rig; tar -C $rig -xJf .rig/rig.tar.xz
export MPI_HOME=$rig/mpich PATH=$rig/mpich/bin:$PATH
nccl=$(ldconfig -p | awk '/libnccl\.so\.2 /{print $NF; exit}')
export LD_LIBRARY_PATH=$MPI_HOME/lib/mpich:$MPI_HOME/lib:$root/gpubundle/lib:$(dirname $nccl):${LD_LIBRARY_PATH:-}
nvidia-smi -L
for c in default 1 8 32; do
  if [[ $c == default ]]; then timeout 120 gpubundle/stream_wait_probe 12; else CUDA_DEVICE_MAX_CONNECTIONS=$c timeout 120 gpubundle/stream_wait_probe 12; fi | tail -1
done 2>&1 | tee $OUT/l/probe.txt
for c in 1 32; do
  for a in 1 0; do
  n=async${a}_conn$c
  timeout -k 5 60 mpiexec -n 2 -genv LD_PRELOAD $root/gpubundle/lib/libbraid.so -genv BRAID_ASYNC $a -genv CUDA_DEVICE_MAX_CONNECTIONS $c \
    -genv BRAID_DEBUG INFO -genv BRAID_DEBUG_SUBSYS INIT,BALANCE -genv BRAID_DEBUG_FILE $OUT/l/$n.%p.braid \
    bench/rig/one-gpu-rank.sh $rig/nccl-tests-mpi/all_reduce_perf -b 1M -e 64M -f 4 -n 20 -w 3 -C 1 -c 1 > $OUT/l/$n.log 2>&1
  echo "$n rc=$?"; grep -E "^ +[0-9]" $OUT/l/$n.log | cut -c1-140
  pkill -9 -f all_reduce_perf; sleep 1
  done
done 2>&1 | tee $OUT/l/summary.txt
for f in $OUT/l/*.braid; do tail -c 100000 $f > $f.t && mv $f.t $f; done
tar -czf $OUT/exp1.tgz -C $OUT l && rm -rf $OUT/l
