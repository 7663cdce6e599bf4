#!/usr/bin/env bash
# Diagnose the hang: async default / 32 connections / BRAID_ASYNC=0, with split logs.
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
W=$R/one-gpu-ranks.sh; chmod +x $W $R/dying
NT=/tmp/nt
run() { local name=$1 t=$2; shift 2; echo "## $name: $*" > $L/$name.log; local s=$(date +%s.%N); timeout $t "$@" >> $L/$name.log 2>&1; local rc=$?; printf "%-28s rc=%-4s %6.1fs rows=%s wrong=%s\n" $name $rc $(echo "$(date +%s.%N) - $s" | bc) "$(grep -cE '^ +[0-9]+ +[0-9]+ +[a-z]' $L/$name.log)" "$(grep -E '^ +[0-9]' $L/$name.log | awk '{w+=$9+$13} END{print w+0}')"; }
P="-genv LD_PRELOAD $B -genv BRAID_DEBUG INFO -genv BRAID_DEBUG_SUBSYS INIT,BALANCE,SHIM -genv BRAID_DEBUG_FILE /tmp/logs/%h.%p.braid"
run host_async 60 mpiexec -n 2 $P $W $NT/all_reduce_perf -b 1M -e 256M -f 4 -n 20 -w 3 -C 1 -c 0
mkdir -p $L/a && mv $L/*.braid $L/a/ 2>/dev/null
run host_conn32 60 mpiexec -n 2 $P -genv CUDA_DEVICE_MAX_CONNECTIONS 32 $W $NT/all_reduce_perf -b 1M -e 256M -f 4 -n 20 -w 3 -C 1 -c 0
mkdir -p $L/b && mv $L/*.braid $L/b/ 2>/dev/null
run host_sync 60 mpiexec -n 2 $P -genv BRAID_ASYNC 0 $W $NT/all_reduce_perf -b 1M -e 256M -f 4 -n 20 -w 3 -C 1 -c 0
mkdir -p $L/c && mv $L/*.braid $L/c/ 2>/dev/null
grep -hE "^ +[0-9]" $L/host_*.log
run m2_ar_conn32 120 mpiexec -n 2 -genv LD_PRELOAD $B -genv BRAID_DEBUG WARN -genv CUDA_DEVICE_MAX_CONNECTIONS 32 $W $NT/all_reduce_perf -d all -o all -c 1 -b 1K -e 256M -f 8 -n 1 -w 0
run m2_ar_sync 120 mpiexec -n 2 -genv LD_PRELOAD $B -genv BRAID_DEBUG WARN -genv BRAID_ASYNC 0 $W $NT/all_reduce_perf -d all -o all -c 1 -b 1K -e 256M -f 8 -n 1 -w 0
run torch_braid 120 env LD_PRELOAD=$B BRAID_DEBUG=WARN CUDA_DEVICE_MAX_CONNECTIONS=32 python3 -m torch.distributed.run --standalone --nproc_per_node=2 --no-python $W python3 bench/checks/torch_collectives.py
grep -hE "WRONG|world" $L/torch_*.log | head
tar -czf $OUT/logs.tgz -C /tmp logs
echo done
