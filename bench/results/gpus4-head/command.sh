#!/usr/bin/env bash
# A four-GPU machine (nvidia-h100-x4 or nvidia-h200-x4), carry .rig gpubundle. The code as it
# stands (eager loading, the CUDA gate, braid's lane communicator with the application's config) on
# four GPUs again, as gpus4-nccl-nvlink/ ran it: (1) the captured-calls GPU test with braid's NVLink
# path forced (BRAID_NVLINK_PATH=copy, the test's own setting); (2) the rig's gpus suite at 4
# (nccl-tests with -c 1, plain beside braid, 1K to 256M); (3) every training case at full scale, one
# plain/braid pair each.
cd "$(dirname "$0")/../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0
{ nvidia-smi -L; nproc; } > "$OUT/gpu.txt" 2>&1
timeout 150 gpubundle/shim_multipath_gpu_test --gtest_filter='*Captured*' > "$OUT/captured-test.txt" 2>&1
echo "captured test rc=$?"; tail -2 "$OUT/captured-test.txt"
OUT=$OUT RIG_PREFLIGHT=0 RIG_BUDGET=${RIG_BUDGET:-200} RIG_GPUS_MAX=${RIG_GPUS_MAX:-256M} \
  bash bench/rig/run.sh gpus 4 > "$OUT/rig-console.txt" 2>&1
echo "rig rc=$?"; grep -E "^== |rc=(1[0-9][0-9]|[1-9]) |SKIPPED|logs,|FAIL" "$OUT/rig-console.txt" | head -20
(OUT=$OUT/train CASES="ddp-comm-b25 ddp-comm-b256 fsdp ddp-compute ddp-comm-compiled fsdp-compiled" REPS=1 TIMEOUT=200 \
  timeout 330 bash bench/train/run.sh) > "$OUT/train-console.txt" 2>&1
echo "train rc=$?"; grep -E "^SUMMARY" "$OUT/train-console.txt" | head -10
cd "$OUT" && tar czf train.tgz train train-console.txt && rm -rf train
