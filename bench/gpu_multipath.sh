#!/usr/bin/env bash
# Issue 5 on the GPU machine: braid as the drop-in runs it (every large collective split across
# NCCL on NVLink and braid's PCIe path by the balancer) against NCCL alone, same run; the PCIe
# path alone for the physical-limit line; the balancer under PCIe interference. Logs and JSON
# (with every split) to $OUT. Usage: bash bench/gpu_multipath.sh [quick|all|variants]
set -u
source "$(dirname "$0")/gpu_env.sh"
what=${1:-all}
B=$G/braid-bench
if [ "$what" = variants ]; then
  # Settings not yet the default, each against NCCL alone in the same run, after the defaults at
  # the same sizes (docs/PERFORMANCE.md).
  {
  for c in all_reduce all_gather reduce_scatter; do
    echo "## $c with the defaults: multipath vs NCCL alone"
    timeout 100 $B --multipath -C $c -b 256M -e 1G -f 4 -n 20 -w 30 -J $OUT/mp_${c}_default.json
  done
  echo "## all_gather with NCCL's NVLink share (BRAID_NVLINK_PATH=nccl): multipath vs NCCL alone"
  BRAID_NVLINK_PATH=nccl timeout 100 $B --multipath -C all_gather -b 256M -e 1G -f 4 -n 20 -w 30 -J $OUT/mp_all_gather_nccl.json
  for c in all_gather reduce_scatter; do
    echo "## $c with the copy-based NCCL share (BRAID_SPLIT_NCCL_SHARE=copy): multipath vs NCCL alone"
    BRAID_NVLINK_PATH=nccl BRAID_SPLIT_NCCL_SHARE=copy timeout 100 $B --multipath -C $c -b 256M -e 1G -f 4 -n 20 -w 30 -J $OUT/mp_${c}_copy.json
  done
  echo "## all_reduce with BRAID_SPLIT_SETTLE_LAG=2: multipath vs NCCL alone"
  BRAID_SPLIT_SETTLE_LAG=2 timeout 100 $B --multipath -C all_reduce -b 256M -e 1G -f 4 -n 20 -w 30 -J $OUT/mp_allreduce_lag2.json
  echo "## all_reduce with reduction kernels of 16 blocks (BRAID_REDUCE_BLOCKS=16): multipath vs NCCL alone"
  BRAID_REDUCE_BLOCKS=16 timeout 100 $B --multipath -C all_reduce -b 256M -e 1G -f 4 -n 20 -w 30 -J $OUT/mp_allreduce_blocks16.json
  echo "## all_reduce with host reductions (BRAID_REDUCE_PLACEMENT=host: no kernels beside NCCL's): multipath vs NCCL alone"
  BRAID_REDUCE_PLACEMENT=host timeout 100 $B --multipath -C all_reduce -b 256M -e 1G -f 4 -n 20 -w 30 -J $OUT/mp_allreduce_host.json
  } > $OUT/variants.log 2>&1
  grep -vE "^#  Rank|Using devices" $OUT/variants.log | cut -c1-230
  exit 0
fi
if [ "$what" = quick ]; then
  timeout 120 $B --multipath -C all_reduce -b 1M -e 1G -f 4 -n 10 -w 20 -J $OUT/mp_quick.json 2>&1 | tail -14
  exit 0
fi
{
  echo "## all_reduce, 1 KB - 1 GiB: multipath vs NCCL alone"
  timeout 200 $B --multipath -C all_reduce -b 1K -e 1G -f 4 -n 20 -w 30 -J $OUT/mp_allreduce.json
  for c in all_gather reduce_scatter; do
    echo "## $c: multipath vs NCCL alone"
    timeout 150 $B --multipath -C $c -b 1K -e 1G -f 8 -n 20 -w 30 -J $OUT/mp_$c.json
  done
  echo "## the physical limit: braid's PCIe path alone at 256 MB and 1 GiB (NCCL alone is above)"
  timeout 100 $B --paths braid -C all_reduce -b 256M -e 1G -f 4 -n 10 -w 3 -J $OUT/pcie_alone_allreduce.json
  timeout 100 $B --paths braid -C all_gather -b 256M -e 1G -f 4 -n 10 -w 3 -J $OUT/pcie_alone_allgather.json
  timeout 100 $B --paths braid -C reduce_scatter -b 256M -e 1G -f 4 -n 10 -w 3 -J $OUT/pcie_alone_reducescatter.json
  echo "## balancer under PCIe interference: hylink vs a static split tuned without it"
  timeout 150 $B --multipath --paths braid -C all_reduce -b 256M -e 256M -w 30 --phases off:30,on:30,off:30 \
    --noise-bytes 256M -J $OUT/mp_phases.json
} > $OUT/multipath.log 2>&1
grep -vE "^#  Rank|Using devices" $OUT/multipath.log | cut -c1-230
