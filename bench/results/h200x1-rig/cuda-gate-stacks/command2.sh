#!/usr/bin/env bash
# One-GPU machine (the one-GPU rig), carry .rig gpubundle. After the gate also holds back
# __cudaLaunchKernel (what nvcc's launch stubs call) and first queries of a kernel: every training
# case with the copy engines' meeting on the progress thread, then on braid's default path, losses
# compared step by step (stacks written if the lane watch fires).
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
(export BRAID_NVLINK_PATH=copy BRAID_PEER_SAME_GPU=1 BRAID_NVLINK_COPY_MIN_BYTES=1048576 BRAID_NVLINK_ON_LANE=1 BRAID_DEBUG=INFO \
   BRAID_WATCH_STACKS=1 BRAID_TIMEOUT=10
 OUT=$OUT/lane WRAPPER=bench/rig/one-gpu-rank.sh RANKS=2 REPS=1 TIMEOUT=60 timeout 280 bash bench/train/run.sh) > "$OUT/lane-console.txt" 2>&1
echo "meeting on the progress thread: rc=$?"; grep -E "^run |SUMMARY" "$OUT/lane-console.txt"
(export BRAID_WATCH_STACKS=1 BRAID_TIMEOUT=10
 OUT=$OUT/default WRAPPER=bench/rig/one-gpu-rank.sh RANKS=2 REPS=1 TIMEOUT=60 timeout 280 bash bench/train/run.sh) > "$OUT/default-console.txt" 2>&1
echo "default path: rc=$?"; grep -E "^run |SUMMARY" "$OUT/default-console.txt"
cd "$OUT" && tar czf logs2.tgz lane default *-console.txt && rm -rf lane default
