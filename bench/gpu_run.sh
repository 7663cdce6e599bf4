#!/usr/bin/env bash
# The GPU session: GPU tests, then braid-bench's acceptance runs (issue 4), all logs and JSON to
# $OUT. Binaries come prebuilt in gpubundle/ (the GPU machine has no package registry).
# Usage on the device:  bash bench/gpu_run.sh [tests|bench|all]
set -u
source "$(dirname "$0")/gpu_env.sh"
what=${1:-all}
summary() { grep -E "^\[  (FAILED|PASSED) |WARN" "$1" | sort | uniq -c | sort -rn | head -12; }
if [ "$what" = shim ]; then
  BRAID_TEST_PROGRESS=1 BRAID_TIMEOUT=20 BRAID_DEBUG=WARN timeout 200 $G/shim_multipath_gpu_test > $OUT/shim_multipath.log 2>&1; echo "shim multipath rc=$?"; summary $OUT/shim_multipath.log; tail -3 $OUT/shim_multipath.log
  BRAID_NVLINK_PATH=nccl BRAID_TIMEOUT=20 BRAID_DEBUG=WARN timeout 200 $G/shim_multipath_gpu_test > $OUT/shim_multipath_nccl.log 2>&1; echo "shim multipath (NCCL on every NVLink share) rc=$?"; summary $OUT/shim_multipath_nccl.log
  BRAID_SPLIT_NCCL_SHARE=copy BRAID_NVLINK_PATH=nccl BRAID_TIMEOUT=20 BRAID_DEBUG=WARN timeout 200 $G/shim_multipath_gpu_test > $OUT/shim_multipath_copy.log 2>&1; echo "shim multipath (copy-based NCCL share) rc=$?"; summary $OUT/shim_multipath_copy.log
  BRAID_TIMEOUT=20 BRAID_DEBUG=WARN timeout 120 $G/shim_group_gpu_test > $OUT/shim_group.log 2>&1; echo "shim group rc=$?"; summary $OUT/shim_group.log; tail -3 $OUT/shim_group.log
  exit 0
fi
if [ "$what" != bench ]; then
  BRAID_TIMEOUT=20 BRAID_DEBUG=WARN timeout 100 $G/api_usage_test > $OUT/usage.log 2>&1; echo "usage rc=$?"; summary $OUT/usage.log
  BRAID_TIMEOUT=20 BRAID_DEBUG=WARN timeout 200 $G/api_collectives_threads_test > $OUT/threads.log 2>&1; echo "threads rc=$?"; summary $OUT/threads.log
  BRAID_TIMEOUT=20 BRAID_DEBUG=WARN timeout 150 $G/api_collectives_processes_test > $OUT/procs.log 2>&1; echo "processes rc=$?"; summary $OUT/procs.log
  BRAID_TEST_PROGRESS=1 BRAID_TIMEOUT=20 BRAID_DEBUG=WARN timeout 200 $G/shim_multipath_gpu_test > $OUT/shim_multipath.log 2>&1; echo "shim multipath rc=$?"; summary $OUT/shim_multipath.log; tail -3 $OUT/shim_multipath.log
  BRAID_NVLINK_PATH=nccl BRAID_TIMEOUT=20 BRAID_DEBUG=WARN timeout 200 $G/shim_multipath_gpu_test > $OUT/shim_multipath_nccl.log 2>&1; echo "shim multipath (NCCL on every NVLink share) rc=$?"; summary $OUT/shim_multipath_nccl.log
  BRAID_SPLIT_NCCL_SHARE=copy BRAID_NVLINK_PATH=nccl BRAID_TIMEOUT=20 BRAID_DEBUG=WARN timeout 200 $G/shim_multipath_gpu_test > $OUT/shim_multipath_copy.log 2>&1; echo "shim multipath (copy-based NCCL share) rc=$?"; summary $OUT/shim_multipath_copy.log
  BRAID_TIMEOUT=20 BRAID_DEBUG=WARN timeout 120 $G/shim_group_gpu_test > $OUT/shim_group.log 2>&1; echo "shim group rc=$?"; summary $OUT/shim_group.log; tail -3 $OUT/shim_group.log
  # all_gather through torchrun: the copy-engine NVLink path across processes (CUDA IPC).
  LD_PRELOAD=$PWD/$G/lib/libbraid.so timeout 150 python3 -m torch.distributed.run --standalone --nproc_per_node=2 \
    bench/ddp/peer_path_check.py > $OUT/peer_path_check.log 2>&1; echo "peer path check rc=$?"; grep -E "PASS|FAIL" $OUT/peer_path_check.log
  # ... with every tensor its own allocation: more peer mappings than braid keeps, some freed while mapped.
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 LD_PRELOAD=$PWD/$G/lib/libbraid.so timeout 150 python3 -m torch.distributed.run --standalone \
    --nproc_per_node=2 bench/ddp/peer_path_check.py > $OUT/peer_path_check_nocache.log 2>&1
  echo "peer path check (no caching allocator) rc=$?"; grep -E "PASS|FAIL" $OUT/peer_path_check_nocache.log
fi
if [ "$what" != tests ]; then
  # Slice and staging sizes: the CUDA backend's defaults (16 MiB, 1 GiB).
  {
    echo "## correctness: every dtype and op, small sizes"
    BRAID_DEBUG=WARN timeout 120 $G/braid-bench -b 8 -e 4M -f 8 -d all -o all -n 1 -w 1 | grep -vE "^ +[0-9]" | tail -5; echo "rc=$?"
    echo "## PCIe-only comparison (NCCL_P2P_DISABLE=1), all_reduce with the PCIe ceiling"
    NCCL_P2P_DISABLE=1 timeout 150 $G/braid-bench -C all_reduce -b 64M -e 1G -f 2 -n 10 -w 3 --ceiling -J $OUT/pcie_allreduce.json
    echo "## PCIe-only comparison (NCCL_P2P_DISABLE=1), all_gather"
    NCCL_P2P_DISABLE=1 timeout 120 $G/braid-bench -C all_gather -b 64M -e 1G -f 2 -n 10 -w 3 -J $OUT/pcie_allgather.json
    echo "## interference: NCCL on NVLink alone vs with braid's PCIe all_reduce beside it"
    timeout 120 $G/braid-bench --interference -b 64M -e 1G -f 2 -n 10 -w 3 -J $OUT/interference.json
    echo "## the same with reduction kernels of 16 blocks (BRAID_REDUCE_BLOCKS=16)"
    BRAID_REDUCE_BLOCKS=16 timeout 120 $G/braid-bench --interference -b 64M -e 1G -f 2 -n 10 -w 3 -J $OUT/interference_blocks16.json
    BRAID_REDUCE_BLOCKS=16 NCCL_P2P_DISABLE=1 timeout 150 $G/braid-bench -C all_reduce -b 256M -e 1G -f 4 -n 10 -w 3 -J $OUT/pcie_allreduce_blocks16.json
  } > $OUT/bench.log 2>&1
  cat $OUT/bench.log | cut -c1-200 | tail -60
fi
