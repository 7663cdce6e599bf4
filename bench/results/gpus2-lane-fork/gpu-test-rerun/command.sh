#!/usr/bin/env bash
# A two-GPU machine, carry gpubundle. The multipath GPU tests again once the calling thread times
# the forks of calls the progress thread comes too late for (the first run, ../command.sh, found
# no measured call in the split matrix, whose calls each wait for the last).
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0
nvidia-smi -L > "$OUT/gpu.txt"
timeout 240 gpubundle/shim_multipath_gpu_test > "$OUT/shim_multipath_gpu_test.txt" 2>&1
echo "shim_multipath_gpu_test rc=$?"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED  \]|Failure|Expected|calls" "$OUT/shim_multipath_gpu_test.txt" | head -12
