#!/usr/bin/env bash
# Session of 2026-11-29 (2), one H200 as the rig: nccl-tests' correctness matrix (every type and
# operator, -c 1) through braid with every split call given a PCIe share (static balancer, 0.25),
# so that braid's own path, not NCCL alone, carries part of each checked call; 2 then 4 ranks.
# braid's BALANCE lines count the calls that had PCIe elements. Lazy loading.
set -u
cd "$(dirname "$0")/../../../.."  # the repository root
export NCCL_NVLS_ENABLE=0 BRAID_BALANCER=static BRAID_STATIC_SHARE=0.25 BRAID_DEBUG=INFO BRAID_DEBUG_SUBSYS=BALANCE
unset CUDA_MODULE_LOADING
date
RIG_PREFLIGHT=0 RIG_BUDGET=500 OUT=$OUT/rig timeout 520 bash bench/rig/run.sh correctness 2 correctness 4 > $OUT/c8-rig.txt 2>&1; echo "rig rc=$?"
tail -30 $OUT/c8-rig.txt | cut -c1-220
mkdir -p /tmp/x && tar -C /tmp/x -xzf $OUT/rig/rig-logs.tar.gz 2>/dev/null
for f in $(find /tmp/x -name 'braid_n*.log' | sort); do
  echo "$(basename $f): split calls with PCIe elements $(grep -c 'split .* + pcie [1-9]' $f), without $(grep -c 'split .* + pcie 0 ' $f), wrong rows $(grep -E '^ +[0-9]+ ' $f | awk '$9+$NF>0' | wc -l)"
done
date
