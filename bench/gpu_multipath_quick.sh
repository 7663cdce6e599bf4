#!/usr/bin/env bash
# A short multipath check: all_reduce 256 MB and 1 GiB against NCCL alone, then the balancer under
# PCIe bursts (bench/results/h200x2/run8).
set -u
source "$(dirname "$0")/gpu_env.sh"
timeout 60 $G/braid-bench --multipath -C all_reduce -b 256M -e 1G -f 4 -n 20 -w 30 -J $OUT/mp_allreduce.json | grep -E "^ +[0-9]"
timeout 60 $G/braid-bench --multipath -C all_gather -b 256M -e 256M -n 20 -w 30 -J $OUT/mp_all_gather.json | grep -E "^ +[0-9]"
timeout 90 $G/braid-bench --multipath --paths braid -C all_reduce -b 256M -e 256M -w 30 --phases off:30,on:30,off:30 \
  --noise-bytes 256M -J $OUT/mp_phases.json > $OUT/phases.log 2>&1
grep -A4 "^# phase" $OUT/phases.log
