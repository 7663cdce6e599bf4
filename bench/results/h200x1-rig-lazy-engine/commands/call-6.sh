#!/usr/bin/env bash
# Session of 2026-11-29 (2), one H200 as the rig: nccl-tests' launch modes through braid (-G 1,
# -u 1, -R 1, -y 1, -z 1, -m 8, -a 3 and the collectives braid passes to NCCL), -c 1, with every
# split call given a PCIe share (the modes suite's new default, RIG_CHECK_SHARE=0.25), 2 ranks then
# as much of 4 as the budget allows; braid's BALANCE lines count the calls with PCIe elements.
set -u
cd "$(dirname "$0")/../../../.."  # the repository root
export NCCL_NVLS_ENABLE=0 BRAID_DEBUG=INFO BRAID_DEBUG_SUBSYS=BALANCE
unset CUDA_MODULE_LOADING
date
RIG_PREFLIGHT=0 RIG_BUDGET=330 OUT=$OUT/rig timeout 345 bash bench/rig/run.sh modes 2 modes 4 > $OUT/c10-rig.txt 2>&1; echo "rig rc=$?"
grep -E "^(ok|FAIL|SKIP)" $OUT/c10-rig.txt | grep -v "^ok" | head -20; tail -2 $OUT/c10-rig.txt
mkdir -p /tmp/x && tar -C /tmp/x -xzf $OUT/rig/rig-logs.tar.gz 2>/dev/null
for f in $(find /tmp/x -name 'braid_n*.log' | sort); do
  echo "$(basename $f): pcie>0 $(grep -c 'split .* + pcie [1-9]' $f), pcie=0 $(grep -c 'split .* + pcie 0 ' $f), rows $(grep -cE '^ +[0-9]+ ' $f), wrong rows $(grep -E '^ +[0-9]+ ' $f | awk '$9+$NF>0' | wc -l)"
done
date
