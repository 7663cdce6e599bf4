#!/usr/bin/env bash
# Checks on the GPU machine with binaries built elsewhere (gpubundle/): the GPU tests and a short
# braid-bench. Usage on the device: bash bench/gpu_probe.sh  (full logs go to $OUT)
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
nccl=$(dirname "$(find / -name 'libnccl.so.2' -not -path '/proc/*' 2>/dev/null | grep -v gpubundle | head -1)")
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:$nccl:${LD_LIBRARY_PATH:-}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
G=gpubundle
export BRAID_TIMEOUT=10 BRAID_DEBUG=WARN
timeout 90 $G/api_usage_test > $OUT/usage.log 2>&1; echo "usage rc=$?"; grep -E "^\[  (FAILED|PASSED) |tests ran" $OUT/usage.log
timeout 120 $G/braid-bench -b 1M -e 64M -f 4 -n 5 -w 2 > $OUT/bench_small.log 2>&1; echo "bench rc=$?"; grep -A2 WARN $OUT/bench_small.log | head -20; tail -8 $OUT/bench_small.log
timeout 200 $G/api_collectives_threads_test > $OUT/threads.log 2>&1; echo "threads rc=$?"; grep -E "WARN|FAILED|PASSED" $OUT/threads.log | head -20
