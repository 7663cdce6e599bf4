#!/usr/bin/env bash
# One-GPU machine (the one-GPU rig), carry .rig gpubundle. (1) The MoE benchmark with braid's
# routing, 2 and 4 ranks, 16 MiB of tokens per rank (flows over BRAID_ROUTE_MIN_BYTES), tokens
# checked exactly. (2) The DDP run that deadlocks with BRAID_NVLINK_ON_LANE=1 (lazy loading):
# the lane watch must now turn it into an error at 2 x BRAID_TIMEOUT, not a hang. (3) The training
# cases on braid's default path, losses compared step by step.
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > "$OUT/gpu.txt"
for n in 2 4; do
  (export BRAID_ROUTE_EXCHANGES=2 BRAID_DEBUG=INFO BRAID_PEER_SAME_GPU=1 BRAID_ROUTE_TOPOLOGY=bench/rig/route-mesh4.json
   OUT=$OUT/moe$n WRAPPER=bench/rig/one-gpu-rank.sh RANKS=$n REPS=1 timeout 150 bash bench/moe/run.sh --tokens 4096 --hidden 2048) \
    > "$OUT/moe$n-console.txt" 2>&1
  echo "moe $n rc=$?"; tail -9 "$OUT/moe$n-console.txt"
done
start=$(date +%s)
(export BRAID_TIMEOUT=10; VARIANTS=lane OUT=$OUT/ddp timeout 150 bash bench/results/h100x1-rig/lane-ddp-hang/command.sh) > "$OUT/ddp-console.txt" 2>&1
echo "ddp lane: $(( $(date +%s) - start )) s"; grep -E "^run |SUMMARY" "$OUT/ddp-console.txt" | head -4
(OUT=$OUT/train WRAPPER=bench/rig/one-gpu-rank.sh RANKS=2 REPS=1 timeout 330 bash bench/train/run.sh) > "$OUT/train-console.txt" 2>&1
echo "train rc=$?"; grep -E "^run |SUMMARY|done in" "$OUT/train-console.txt"
cd "$OUT" && tar czf logs.tgz moe2 moe4 ddp train *-console.txt && rm -rf moe2 moe4 ddp train
