#!/usr/bin/env bash
# Session experiment (not committed): the async path after eager kernel loading.
set -u
cd "$(dirname "$0")/../../../../.."; root=$PWD  # the repository root
OUT=${OUT:-/tmp/out}; mkdir -p $OUT/l
export NCCL_NVLS_ENABLE=0 MPIR_CVAR_ENABLE_GPU=0 NCCL_DEBUG=WARN
rig=/tmp/rig; mkdir -p $rig; tar -C $rig -xJf .rig/rig.tar.xz; cp .rig/MANIFEST $rig/
export MPI_HOME=$rig/mpich PATH=$rig/mpich/bin:$PATH
nccl=$(ldconfig -p | awk '/libnccl\.so\.2 /{print $NF; exit}')
export LD_LIBRARY_PATH=$MPI_HOME/lib/mpich:$MPI_HOME/lib:$root/gpubundle/lib:$(dirname $nccl):${LD_LIBRARY_PATH:-}
for n in 2 4; do
  timeout -k 5 90 mpiexec -n $n -genv LD_PRELOAD $root/gpubundle/lib/libbraid.so -genv BRAID_ASYNC 1 \
    -genv BRAID_DEBUG INFO -genv BRAID_DEBUG_SUBSYS INIT,BALANCE -genv BRAID_DEBUG_FILE $OUT/l/q$n.%p.braid \
    bench/rig/one-gpu-rank.sh $rig/nccl-tests-mpi/all_reduce_perf -b 1M -e 256M -f 4 -n 20 -w 3 -C 1 -c 1 > $OUT/l/quick$n.log 2>&1
  echo "quick n=$n rc=$?"; grep -E "^ +[0-9]" $OUT/l/quick$n.log | cut -c1-140
  pkill -9 -f all_reduce_perf; sleep 1
done 2>&1 | tee $OUT/l/summary.txt
for f in $OUT/l/*.braid; do tail -c 60000 $f > $f.t && mv $f.t $f; done
tar -czf $OUT/exp2.tgz -C $OUT l && rm -rf $OUT/l
BRAID_ASYNC=1 RIG_PREFLIGHT=0 RIG_BUDGET=300 bash bench/rig/run.sh hosttime 2 correctness 2 2>&1 | tail -40
