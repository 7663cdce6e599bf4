#!/usr/bin/env bash
# A two-GPU machine (nvidia-h100-x2; it may come as 2x H200), carry .rig gpubundle. Why DDP with
# 25 MB buckets ran slower through braid (command.sh): the two cases that moved, alternating plain
# and braid twice, for three configurations: braid's default (25 MB AllReduces on braid's NVLink
# path, its per-call meeting on the calling thread), that meeting on the progress thread
# (BRAID_NVLINK_ON_LANE=1), and NCCL for everything under 128 MiB (BRAID_NVLINK_COPY_MIN_BYTES).
cd "$(dirname "$0")/../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > "$OUT/gpu.txt"
for v in default lane copy128m; do
  ( case $v in lane) export BRAID_NVLINK_ON_LANE=1 ;; copy128m) export BRAID_NVLINK_COPY_MIN_BYTES=134217728 ;; esac
    export CASES="ddp-comm-b25 fsdp" BRAID_TIMEOUT=15 BRAID_WATCH_STACKS=1
    OUT=$OUT/$v REPS=2 TIMEOUT=60 timeout 170 bash bench/train/run.sh ) > "$OUT/$v-console.txt" 2>&1
  echo "$v rc=$?"; grep -E "^run .*braid|SUMMARY" "$OUT/$v-console.txt" | sort -u
done
cd "$OUT" && tar czf logs2.tgz default lane copy128m *-console.txt && rm -rf default lane copy128m
