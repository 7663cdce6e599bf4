#!/usr/bin/env bash
# braid all_reduce by chunks per block and reduce placement (bench/results/h200x2/sweep_chunks.log).
set -u
source "$(dirname "$0")/gpu_env.sh"
for ch in 1 2 4 8; do for pl in device host; do echo "## chunks=$ch placement=$pl"; BRAID_CHUNKS=$ch BRAID_REDUCE_PLACEMENT=$pl timeout 60 $G/braid-bench -C all_reduce -b 256M -e 1G -f 4 -n 5 -w 2 --paths braid | grep -E "^ +[0-9]"; done; done
