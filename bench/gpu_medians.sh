#!/usr/bin/env bash
# Issue 5's ratio lines with medians: every collective the drop-in splits, 1 KB - 1 GiB, with the
# defaults, each row measured 5 times (braid and NCCL alternately) and reported as each path's
# median repetition. Packed into $OUT/results-medians.tgz. Usage: bash bench/gpu_medians.sh
set -u
source "$(dirname "$0")/gpu_env.sh"
final=$OUT
OUT=$final/results-medians; mkdir -p "$OUT"
{
  for c in all_gather reduce_scatter all_reduce; do
    echo "## $c with the defaults: multipath vs NCCL alone, median of 5 repetitions"
    timeout 150 $G/braid-bench --multipath -C $c -b 1K -e 1G -f 4 -n 20 -w 30 --repeat 5 -J $OUT/mp_${c}_medians.json \
      | grep -E "^ +[0-9]"
  done
} > $OUT/medians.log 2>&1
cut -c1-200 $OUT/medians.log
tar czf "$final/results-medians.tgz" -C "$final" results-medians && rm -rf "$OUT"
