#!/usr/bin/env bash
# nccl-tests' launch modes through the asynchronous split call at 2 ranks (run-b2's budget ran out
# before most of them).
set -u
cd "$(dirname "$0")/../../../.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
RIG_PREFLIGHT=0 RIG_BUDGET=240 bash bench/rig/run.sh modes 2 > "$OUT/rig-console.txt" 2>&1
grep -E "^(rc=|FAIL|==)" "$OUT/rig-console.txt" | tail -30
