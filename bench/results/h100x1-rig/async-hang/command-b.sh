#!/usr/bin/env bash
set -u
cd "$(dirname "$0")/../.."
R=$PWD/.ext/rig
OUT=${OUT:-/tmp/out}; L=/tmp/logs; mkdir -p $OUT $L
export NCCL_NVLS_ENABLE=0
mkdir -p /tmp/mpich && python3 -m zipfile -e $R/mpich-*.whl /tmp/mpich && tar -xJf $R/nt.tar.xz -C /tmp
export MPI_HOME=/tmp/mpich/mpich-5.0.2.data/data; chmod +x $MPI_HOME/bin/*
nccl=$(dirname "$(find / -name 'libnccl.so.2' -not -path '/proc/*' 2>/dev/null | grep -v gpubundle | grep -v site-packages | head -1)")
export PATH=$MPI_HOME/bin:$PATH LD_LIBRARY_PATH=$MPI_HOME/lib/mpich:$MPI_HOME/lib:$PWD/gpubundle/lib:$nccl:${LD_LIBRARY_PATH:-}
B=$PWD/gpubundle/lib/libbraid.so
W=$R/one-gpu-ranks.sh; chmod +x $W
NT=/tmp/nt
P="-genv LD_PRELOAD $B -genv BRAID_DEBUG TRACE -genv BRAID_DEBUG_SUBSYS BALANCE,ENGINE -genv BRAID_DEBUG_FILE /tmp/logs/%h.%p.braid"
timeout 40 mpiexec -n 2 $P $W $NT/all_reduce_perf -b 1M -e 64M -f 4 -n 20 -w 3 -C 1 -c 0 > $L/host_async.log 2>&1; echo rc=$?
for f in $L/*.braid; do tail -c 300000 $f > $f.tail; rm $f; done
tar -czf $OUT/logs.tgz -C /tmp logs
