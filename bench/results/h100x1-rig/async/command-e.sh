#!/usr/bin/env bash
# After the engine's control segment gave up the peer layer's named counters for anonymous path
# signals, and enum settings became checked Choices: the CUDA kernels' own test, the 2-rank
# correctness matrix, nccl-tests' launch modes at 4 ranks (1 KB to 64 MB), host time at 4 ranks.
set -u
cd "$(dirname "$0")/../../../.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
BRAID_DEBUG=WARN timeout 60 gpubundle/cuda_peer_reduce_gpu_test > "$OUT/peer_reduce_gpu_test.log" 2>&1
echo "cuda_peer_reduce_gpu_test rc=$?"; grep -E "^\[  (PASSED|FAILED)" "$OUT/peer_reduce_gpu_test.log"
RIG_PREFLIGHT=0 RIG_BUDGET=500 RIG_HOSTTIME_ROUNDS=3 bash bench/rig/run.sh correctness 2 modes 4 hosttime 4 \
  > "$OUT/rig-console.txt" 2>&1
grep -E "^(FAIL|==)" "$OUT/rig-console.txt" | tail -12; grep -A20 "== host time" "$OUT/rig-console.txt" | tail -21
