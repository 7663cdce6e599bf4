#!/usr/bin/env bash
# After moving the split agreement into multipath::SplitLedger: the 2-rank correctness matrix, one
# host-time round and two training cases, to check the refactored orchestrator on the GPU.
set -u
cd "$(dirname "$0")/../../../.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
RIG_PREFLIGHT=0 RIG_BUDGET=250 RIG_HOSTTIME_ROUNDS=1 bash bench/rig/run.sh correctness 2 hosttime 2 > "$OUT/rig-console.txt" 2>&1
grep -E "^(FAIL|==)" "$OUT/rig-console.txt" | tail -8; grep -A20 "== host time" "$OUT/rig-console.txt" | tail -21
CASES="ddp-comm-b25 fsdp" WRAPPER=bench/rig/one-gpu-rank.sh RANKS=2 REPS=1 timeout 110 bash bench/train/run.sh > "$OUT/train-console.txt" 2>&1
grep SUMMARY "$OUT/train-console.txt" | sort -u
tar -czf "$OUT/train.tgz" -C "$OUT" train 2>/dev/null && rm -rf "$OUT/train"
