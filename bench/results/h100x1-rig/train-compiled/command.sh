#!/usr/bin/env bash
# Training under torch.compile through the drop-in on the one-GPU rig, 2 ranks: DDP on the
# communication-bound MLP and FSDP2 on the transformer, plain NCCL and braid alternating, losses
# compared step by step. From the repo root, carry gpubundle.
set -u
cd "$(dirname "$0")/../../../.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
CASES="ddp-comm-compiled fsdp-compiled" TIMEOUT=240 WRAPPER=bench/rig/one-gpu-rank.sh RANKS=2 REPS=1 \
  timeout 560 bash bench/train/run.sh > "$OUT/train-console.txt" 2>&1
tail -25 "$OUT/train-console.txt"
tar -czf "$OUT/train.tgz" -C "$OUT" train 2>/dev/null && rm -rf "$OUT/train"
