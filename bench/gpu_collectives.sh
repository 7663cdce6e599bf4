#!/usr/bin/env bash
# braid's PCIe path vs NCCL's host-staged path for the collectives gpu_run.sh does not cover
# (bench/results/h200x2/other_collectives.log).
set -u
source "$(dirname "$0")/gpu_env.sh"
for c in reduce_scatter alltoall broadcast reduce; do
  echo "## $c"
  NCCL_P2P_DISABLE=1 timeout 90 $G/braid-bench -C $c -b 64M -e 1G -f 4 -n 5 -w 2 | grep -E "^ +[0-9]|wrong"
done
