#!/usr/bin/env bash
# One-GPU machine (the one-GPU rig), carry .rig gpubundle. At default settings, 4 ranks sharing the
# GPU (one process per rank, each its own host to NCCL):
#  1. the training cases of bench/train/run.sh (DDP 25 and 256 MB buckets, FSDP2, compute-bound),
#     plain and through the drop-in, one pair each: losses must be equal step by step;
#  2. host time per call (host_time_probe: each call timed alone, median of 30 per size), plain
#     and braid alternating, one round.
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > "$OUT/gpu.txt"; nproc >> "$OUT/gpu.txt"
(OUT=$OUT/train4 WRAPPER=bench/rig/one-gpu-rank.sh RANKS=4 REPS=1 TIMEOUT=120 BRAID_DEBUG=INFO BRAID_DEBUG_SUBSYS=INIT \
   timeout 400 bash bench/train/run.sh) > "$OUT/train4-console.txt" 2>&1
echo "train4 rc=$? at ${SECONDS}s"; grep -E "^run |SUMMARY|equal|differ|ratio" "$OUT/train4-console.txt" | head -20
left=$((585 - SECONDS))
(OUT=$OUT/hosttime RIG_PREFLIGHT=0 RIG_BUDGET=$left RIG_HOSTTIME_TOOLS=probe RIG_HOSTTIME_ROUNDS=1 bash bench/rig/run.sh hosttime 4) > "$OUT/hosttime-console.txt" 2>&1
echo "hosttime rc=$? at ${SECONDS}s"; grep -E "over|median|rows|SKIP" "$OUT/hosttime-console.txt" | tail -8
cd "$OUT" && tar czf logs.tgz train4 hosttime 2>/dev/null; rm -rf train4 hosttime
