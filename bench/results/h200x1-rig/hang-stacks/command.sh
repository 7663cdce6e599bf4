#!/usr/bin/env bash
# One-GPU machine, carry .rig gpubundle. (1) host_block_probe: which CUDA calls that wait for the
# device stop another thread from queueing work. (2) The DDP hang with BRAID_NVLINK_ON_LANE=1
# again, now with every thread's stack written to braid's log when the lane watch fires
# (BRAID_WATCH_STACKS=1, BRAID_TIMEOUT=15). (3) The MoE benchmark with braid's routing engaged,
# 2 and 4 ranks on the rig, tokens checked exactly.
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > "$OUT/gpu.txt"
timeout 100 gpubundle/host_block_probe > "$OUT/host_block.txt" 2>&1; echo "probe rc=$?" >> "$OUT/host_block.txt"
cat "$OUT/host_block.txt"
(export BRAID_WATCH_STACKS=1 BRAID_TIMEOUT=15; VARIANTS=lane OUT=$OUT/ddp timeout 150 \
  bash bench/results/h100x1-rig/lane-ddp-hang/command.sh) > "$OUT/ddp-console.txt" 2>&1
tail -3 "$OUT/ddp-console.txt"
for n in 2 4; do
  (export BRAID_ROUTE_EXCHANGES=2 BRAID_DEBUG=INFO BRAID_PEER_SAME_GPU=1 BRAID_ROUTE_TOPOLOGY=bench/rig/route-mesh4.json
   OUT=$OUT/moe$n WRAPPER=bench/rig/one-gpu-rank.sh RANKS=$n REPS=1 timeout 170 bash bench/moe/run.sh) > "$OUT/moe$n-console.txt" 2>&1
  echo "moe $n rc=$?"; tail -12 "$OUT/moe$n-console.txt"
done
cd "$OUT" && tar czf logs.tgz ddp moe2 moe4 ddp-console.txt moe2-console.txt moe4-console.txt && rm -rf ddp moe2 moe4 *-console.txt
