#!/usr/bin/env bash
# A two-GPU machine, carry .rig gpubundle. As command.sh, every subsystem at TRACE (each split
# call's steps), twice: with CUDA_MODULE_LOADING=EAGER (no kernel loaded at its first launch), then
# lazy (CUDA's default). Each run is bounded at 50 s; Python stacks at 38 s.
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0
nvidia-smi -L > "$OUT/gpu.txt"
for loading in EAGER LAZY; do
  d=$OUT/$loading; mkdir -p "$d"
  CUDA_MODULE_LOADING=$loading LD_PRELOAD=$PWD/gpubundle/lib/libbraid.so BRAID_NVLINK_ON_LANE=1 BRAID_DEBUG=TRACE \
    BRAID_DEBUG_SUBSYS=ALL BRAID_TIMEOUT=10 BRAID_WATCH_STACKS=1 BRAID_DEBUG_FILE="$d/braid.%p.log" \
    timeout 50 python3 -m torch.distributed.run --standalone --nproc_per_node=2 bench/train/train.py --model fsdp \
    --steps 12 --out "$d/fsdp.json" > "$d/fsdp-lane.log" 2>&1 &
  launcher=$!
  for ((t = 0; t < 38; t++)); do kill -0 $launcher 2>/dev/null || break; sleep 1; done
  for p in $(pgrep -f bench/train/train.py); do
    grep -q torch.distributed.run /proc/$p/cmdline 2>/dev/null || { echo "USR1 -> $p"; kill -USR1 "$p"; }
  done
  wait $launcher; echo "== $loading: launcher rc=$?"
  grep -E "^step|median" "$d/fsdp-lane.log" | tail -3; grep -h "WARN" "$d"/braid.*.log | head -6
done
cd "$OUT" && tar czf logs.tgz EAGER LAZY && rm -rf EAGER LAZY
