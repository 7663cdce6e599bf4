#!/usr/bin/env bash
# Session of 2026-11-29 (2), one H200 as the rig, main with the lazy PCIe engine (32eea2f) and later:
# the GPU test binaries (shim_pcie_engine_gpu_test among them), a mixed run of 1000 calls through
# the drop-in at 2 rig ranks (sizes to 16 MB: NCCL crosses sockets here), and host time per call at
# 4 rig ranks over 3 rounds (each call timed alone), lazy loading.
set -u
cd "$(dirname "$0")/../../../.."  # the repository root
source bench/gpu_env.sh
export NCCL_NVLS_ENABLE=0
unset CUDA_MODULE_LOADING
git log --oneline -1 2>/dev/null; nvidia-smi -L; date
echo "== gpu_check tests"
GPU_CHECK_BUDGET=200 OUT=$OUT/c5 timeout 230 bash bench/gpu_check.sh tests > $OUT/c5-tests.txt 2>&1; echo "tests rc=$?"
grep -iE "FAIL|PASS|skip|pcie_engine" $OUT/c5-tests.txt | head -40 | cut -c1-220
date
echo "== mixed, 2 rig ranks"
timeout 200 python3 bench/mixed_collectives.py --ranks 2 --calls 1000 --max-mb 16 --pairs 1 --timeout 90 \
  --logs $OUT/mixed --json $OUT/mixed2.json > $OUT/c5-mixed.txt 2>&1; echo "mixed rc=$?"
tail -8 $OUT/c5-mixed.txt | cut -c1-250
grep -h "PCIe engine\|pcie engine\|made braid" $OUT/mixed/*.log 2>/dev/null | head -4 | cut -c1-250
date
echo "== host time, 4 rig ranks, 3 rounds"
RIG_PREFLIGHT=0 RIG_BUDGET=230 RIG_HOSTTIME_ROUNDS=3 RIG_HOSTTIME_TOOLS=probe OUT=$OUT/rig timeout 240 bash bench/rig/run.sh hosttime 4 > $OUT/c5-rig.txt 2>&1; echo "rig rc=$?"
grep -A30 "== host time" $OUT/c5-rig.txt | cut -c1-200
tail -4 $OUT/c5-rig.txt | cut -c1-200
date
