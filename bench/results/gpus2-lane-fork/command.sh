#!/usr/bin/env bash
# A two-GPU machine (nvidia-h100-x2 or nvidia-h200-x2), carry .rig gpubundle. After the progress
# thread took over timing the fork and braid's NVLink path pulls AllGather on a stream per peer
# (with the unused helper streams gone): (1) the multipath GPU tests (the split matrix, whose trace
# must now show measured calls, and captured calls); (2) the peer path's GPU tests; (3) the rig's
# graph, gpus and nvlink suites with a GPU per rank: nccl-tests -c 1 in every mode, plain beside
# braid, 1K to RIG_GPUS_MAX.
cd "$(dirname "$0")/../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0
{ nvidia-smi -L; nvidia-smi topo -m; nproc; } > "$OUT/gpu.txt" 2>&1
{
  for t in shim_multipath_gpu_test peer_allocation_share_gpu_test cuda_peer_reduce_gpu_test; do
    timeout 240 gpubundle/$t > "$OUT/$t.txt" 2>&1; echo "$t rc=$?"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED  \]" "$OUT/$t.txt" | head -8
  done
} > "$OUT/gpu-tests.txt" 2>&1
cat "$OUT/gpu-tests.txt"
tar czf "$OUT/gpu-test-logs.tar.gz" -C "$OUT" shim_multipath_gpu_test.txt peer_allocation_share_gpu_test.txt cuda_peer_reduce_gpu_test.txt \
  && rm -f "$OUT"/shim_multipath_gpu_test.txt "$OUT"/peer_allocation_share_gpu_test.txt "$OUT"/cuda_peer_reduce_gpu_test.txt
OUT=$OUT RIG_PREFLIGHT=0 RIG_BUDGET=${RIG_BUDGET:-330} RIG_GPUS_MAX=${RIG_GPUS_MAX:-256M} \
  bash bench/rig/run.sh ${SUITES:-graph 2 gpus 2 nvlink 2} > "$OUT/rig-console.txt" 2>&1
echo "rig rc=$?"; grep -E "^== |rc=(1[0-9][0-9]|[1-9]) |SKIPPED|logs,|FAIL" "$OUT/rig-console.txt" | head -60
