#!/usr/bin/env bash
# AllGather's NVLink share on braid's copy-engine path (src/peer) on the GPU machine: the path
# alone against NCCL alone from 1 MB to 1 GiB, multipath with it against NCCL alone (same run),
# the defaults from 1 KB, and the same multipath with NCCL's share (BRAID_NVLINK_PATH=nccl).
# Packed into $OUT/results-copy.tgz. Usage on the device: bash bench/gpu_nvlink_copy.sh
# (Run 10's results-copy came from an earlier form that also ran ReduceScatter and AllReduce on
# the copy engines: docs/PERFORMANCE.md says why those went back to NCCL.)
set -u
source "$(dirname "$0")/gpu_env.sh"
final=$OUT
OUT=$final/results-copy; mkdir -p "$OUT"
B=$G/braid-bench
{
  echo "## all_gather: the copy-engine path alone (static share 0) vs NCCL alone, 1 MB - 1 GiB"
  BRAID_BALANCER=static BRAID_STATIC_SHARE=0 BRAID_NVLINK_COPY_MIN_BYTES=1048576 \
    timeout 90 $B --multipath -C all_gather -b 1M -e 1G -f 4 -n 20 -w 10 -J $OUT/ce_alone_all_gather.json | grep -E "^ +[0-9]"
  echo "## all_gather with the defaults (copy-engine NVLink share + PCIe), 1 KB - 1 GiB, vs NCCL alone"
  timeout 120 $B --multipath -C all_gather -b 1K -e 1G -f 4 -n 20 -w 30 -J $OUT/mp_all_gather_auto.json | grep -E "^ +[0-9]"
  echo "## all_gather with NCCL's NVLink share + PCIe, vs NCCL alone"
  BRAID_NVLINK_PATH=nccl timeout 90 $B --multipath -C all_gather -b 128M -e 1G -f 2 -n 20 -w 30 \
    -J $OUT/mp_all_gather_nccl.json | grep -E "^ +[0-9]"
} > $OUT/copy.log 2>&1
cut -c1-200 $OUT/copy.log
tar czf "$final/results-copy.tgz" -C "$final" results-copy && rm -rf "$OUT"
