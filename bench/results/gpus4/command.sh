#!/usr/bin/env bash
# A four-GPU machine (nvidia-h100-x4 or nvidia-h200-x4), carry .rig gpubundle. (1) What each CUDA
# call of a split call costs the caller (host_cost_probe, with the join's variants). (2) The GPU test
# of calls captured in CUDA graphs, every GPU. (3) The rig's graph suite with a GPU per rank (-G on
# braid's NVLink path with -c 1; -G 5 all_gather and all_reduce at default settings, plain and
# braid). (4) The rig's gpus suite at 4: nccl-tests -t 4 -g 1, one process per GPU, -p 1, -G 1,
# -g 4, -d all -o all, -c 1, plain beside braid, 1K to RIG_GPUS_MAX.
cd "$(dirname "$0")/../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0
{ nvidia-smi -L; nvidia-smi topo -m; nproc; } > "$OUT/gpu.txt" 2>&1
timeout 60 gpubundle/host_cost_probe 20000 > "$OUT/host_cost_probe.txt" 2>&1; cat "$OUT/host_cost_probe.txt"
timeout 150 gpubundle/shim_multipath_gpu_test --gtest_filter='*Captured*' > "$OUT/captured-test.txt" 2>&1
echo "captured test rc=$?"; tail -3 "$OUT/captured-test.txt"
OUT=$OUT RIG_PREFLIGHT=0 RIG_BUDGET=${RIG_BUDGET:-330} RIG_GPUS_MAX=${RIG_GPUS_MAX:-256M} \
  bash bench/rig/run.sh graph 4 gpus 4 > "$OUT/rig-console.txt" 2>&1
echo "rig rc=$?"; grep -E "^== |rc=(1[0-9][0-9]|[1-9]) |SKIPPED|logs,|FAIL|one GPU per rank" "$OUT/rig-console.txt" | head -40
grep -A12 "default-n4" "$OUT/rig-console.txt" | head -30
