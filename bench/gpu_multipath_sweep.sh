#!/usr/bin/env bash
# How the PCIe share's engine settings move the multipath gain (all_reduce 256 MB and 1 GiB,
# braid --multipath against NCCL alone, same run per line). bench/results/h200x2/run6.
set -u
source "$(dirname "$0")/gpu_env.sh"
for v in "" "BRAID_REDUCE_PLACEMENT=host" "BRAID_CHUNKS=8" "BRAID_CHUNKS=2" "BRAID_SLICE_BYTES=4194304" "BRAID_CHUNKS=8 BRAID_SLICE_BYTES=4194304"; do
  echo "## ${v:-defaults}"
  env $v timeout 60 $G/braid-bench --multipath -C all_reduce -b 256M -e 1G -f 4 -n 20 -w 30 | grep -E "^ +[0-9]"
done
