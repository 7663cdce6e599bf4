#!/usr/bin/env bash
# A two-GPU machine, carry .rig gpubundle. FSDP2 (bench/train/train.py --model fsdp, full scale)
# through braid with the copy engines' meeting on the progress thread (BRAID_NVLINK_ON_LANE=1),
# which hung at its first step with no WARN: braid's log at TRACE, the lane watch at a 10 s bound
# with every thread's stack (it now also WARNs when the GPU stops short of a release braid queued),
# and each rank's Python stacks (faulthandler on SIGUSR1) after 40 s.
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0
nvidia-smi -L > "$OUT/gpu.txt"
mkdir -p "$OUT/logs"
LD_PRELOAD=$PWD/gpubundle/lib/libbraid.so BRAID_NVLINK_ON_LANE=1 BRAID_DEBUG=TRACE BRAID_TIMEOUT=10 \
  BRAID_WATCH_STACKS=1 BRAID_DEBUG_FILE="$OUT/logs/braid.%p.log" \
  timeout 70 python3 -m torch.distributed.run --standalone --nproc_per_node=2 bench/train/train.py --model fsdp \
  --out "$OUT/logs/fsdp.json" > "$OUT/logs/fsdp-lane.log" 2>&1 &
launcher=$!
sleep 45
for p in $(pgrep -f bench/train/train.py); do
  grep -q torch.distributed.run /proc/$p/cmdline 2>/dev/null || { echo "USR1 -> $p"; kill -USR1 "$p"; }
done
wait $launcher; echo "launcher rc=$?"
tail -5 "$OUT/logs/fsdp-lane.log"; grep -h "WARN" "$OUT"/logs/braid.*.log | head -20
cd "$OUT" && tar czf logs.tgz logs && rm -rf logs
