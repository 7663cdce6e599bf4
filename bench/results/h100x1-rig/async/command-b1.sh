#!/usr/bin/env bash
# The asynchronous split call with timing sampled (one in four calls of a kind after the first
# eight): host time against NCCL at 2 and 4 ranks, dying ranks, the argument fuzz.
set -u
cd "$(dirname "$0")/../../../.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
FUZZ_BIN=gpubundle/shim_argument_fuzz_gpu RIG_PREFLIGHT=0 RIG_BUDGET=530 RIG_HOSTTIME_ROUNDS=3 \
  bash bench/rig/run.sh hosttime 2 dying 2 dying 4 fuzz hosttime 4 > "$OUT/rig-console.txt" 2>&1
grep -A200 "== host time" "$OUT/rig-console.txt"; grep -E "^(FAIL|==)" "$OUT/rig-console.txt" | tail -20
