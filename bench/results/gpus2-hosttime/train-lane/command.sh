#!/usr/bin/env bash
# A two-GPU machine, carry .rig gpubundle, right after ../command.sh on the same warm machine:
# PyTorch training under torchrun, plain and through braid alternating (bench/train/run.sh), with
# braid's default (the copy engines' meeting on the calling thread) and with BRAID_NVLINK_ON_LANE=1
# (the meeting on the progress thread): does the progress thread's meeting pass in training, and at
# what speed.
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0
nvidia-smi -L > "$OUT/gpu.txt"
(OUT=$OUT/lane BRAID_NVLINK_ON_LANE=1 CASES="${LANE_CASES:-ddp-comm-b256 fsdp ddp-comm-b25 fsdp-compiled}" REPS=1 TIMEOUT=150 \
  timeout 330 bash bench/train/run.sh) > "$OUT/train-lane.txt" 2>&1
echo "== lane rc=$?"; grep -E "^SUMMARY|timed out|FAIL" "$OUT/train-lane.txt" | sort -u
(OUT=$OUT/default CASES="${DEFAULT_CASES:-ddp-comm-b256 fsdp}" REPS=1 TIMEOUT=100 \
  timeout 200 bash bench/train/run.sh) > "$OUT/train-default.txt" 2>&1
echo "== default rc=$?"; grep -E "^SUMMARY|timed out|FAIL" "$OUT/train-default.txt" | sort -u
cd "$OUT" && tar czf train.tgz lane default train-*.txt && rm -rf lane default
