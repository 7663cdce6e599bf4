#!/usr/bin/env bash
# A four-GPU machine (nvidia-h100-x4 or nvidia-h200-x4), carry .rig gpubundle. braid's AllGather on
# its own NVLink path with one copy stream per peer (it had two for all peers), forced on at 4
# ranks: (1) the captured-calls GPU test (the path forced by the test itself); (2) the rig's nvlink
# suite: all_gather and all_reduce one process per GPU, -c 1, 16 MB-1 GiB, plain NCCL beside
# braid with BRAID_NVLINK_PATH=copy, and all_gather -G 5 the same way.
cd "$(dirname "$0")/../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0
{ nvidia-smi -L; nproc; } > "$OUT/gpu.txt" 2>&1
timeout 120 gpubundle/shim_multipath_gpu_test --gtest_filter='*Captured*' > "$OUT/captured-test.txt" 2>&1
echo "captured test rc=$?"; tail -1 "$OUT/captured-test.txt"
OUT=$OUT RIG_PREFLIGHT=0 RIG_BUDGET=${RIG_BUDGET:-170} bash bench/rig/run.sh nvlink 4 > "$OUT/rig-console.txt" 2>&1
echo "rig rc=$?"; grep -E "^== |rc=(1[0-9][0-9]|[1-9]) |SKIPPED|logs,|FAIL|#wrong|[0-9]{8,} " "$OUT/rig-console.txt" | head -40
