#!/usr/bin/env bash
# Tuning sweep on the GPU machine: braid's PCIe all_reduce by slice size and reduce placement,
# and the threads GPU test under AddressSanitizer when gpubundle/ carries it.
set -u
source "$(dirname "$0")/gpu_env.sh"
export BRAID_STAGING_BYTES=2147483648
{
for place in device host; do
  for slice in 1048576 4194304 16777216 67108864; do
    echo "## placement=$place slice=$slice"
    BRAID_REDUCE_PLACEMENT=$place BRAID_SLICE_BYTES=$slice timeout 60 $G/braid-bench -C all_reduce -b 256M -e 1G -f 4 -n 5 -w 2 --paths braid | grep -E "^ +[0-9]"
  done
done
echo "## all_gather slice=16M"; BRAID_SLICE_BYTES=16777216 timeout 60 $G/braid-bench -C all_gather -b 256M -e 1G -f 4 -n 5 -w 2 --paths braid | grep -E "^ +[0-9]"
} > $OUT/sweep.log 2>&1
cat $OUT/sweep.log
if [ -x $G/asan/api_collectives_threads_test ]; then
  ASAN_OPTIONS=protect_shadow_gap=0:detect_leaks=0 BRAID_TIMEOUT=20 timeout 200 $G/asan/api_collectives_threads_test --gtest_filter='*OneGpu*' > $OUT/threads_asan.log 2>&1
  echo "asan rc=$?"; grep -E "ERROR|SUMMARY|#[0-9] " $OUT/threads_asan.log | head -30
fi
if [ -x $G/reduce_bench ]; then
  echo "## host reduction on the GPU host: $(nproc) cores"
  timeout 120 $G/reduce_bench --benchmark_min_time=0.2 --benchmark_filter='/(1|2|4|8|16)/real_time' 2>&1 | tee $OUT/host_reduce_h200_host.txt | tail -30
fi
