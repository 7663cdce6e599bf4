#!/usr/bin/env bash
# A two-GPU machine, carry .rig gpubundle. Does CUDA's hardware-queue aliasing decide braid's hangs?
# CUDA maps streams onto CUDA_DEVICE_MAX_CONNECTIONS hardware queues (8 by default; Megatron-LM sets
# 1). A stream wait that only work queued later on the same GPU satisfies (the caller's join on
# braid's completion word, before the progress thread queues the copies) deadlocks when a later
# stream shares the waiting stream's queue.
#  (A) FSDP2 with the copy engines' meeting on the progress thread (BRAID_NVLINK_ON_LANE=1), which
#      hung at 8 connections: at 32 and at 1.
#  (B) braid's defaults at 1 connection: FSDP2, DDP, and nccl-tests -c 1 (the gpus suite to 64M)
#      with every split call handed to the progress thread (BRAID_BALANCER=static).
cd "$(dirname "$0")/../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0
{ nvidia-smi -L; nproc; } > "$OUT/gpu.txt" 2>&1
train() {  # NAME TIMEOUT MODEL [ENV=VALUE]... -- [train.py args]
  local name=$1 limit=$2 model=$3; shift 3
  local env=(); while (($#)) && [[ $1 != -- ]]; do env+=("$1"); shift; done; shift
  mkdir -p "$OUT/$name"
  env "${env[@]}" LD_PRELOAD=$PWD/gpubundle/lib/libbraid.so BRAID_TIMEOUT=10 BRAID_DEBUG=WARN \
    BRAID_DEBUG_FILE="$OUT/$name/braid.%p.log" timeout "$limit" python3 -m torch.distributed.run --standalone \
    --nproc_per_node=2 bench/train/train.py --model "$model" --steps 12 --out "$OUT/$name/run.json" "$@" \
    > "$OUT/$name/run.log" 2>&1
  echo "== $name rc=$? ($SECONDS s)"; grep -E "^median|loss" "$OUT/$name/run.log" | tail -2
  grep -h WARN "$OUT/$name"/braid.*.log 2>/dev/null | head -3
}
train lane-c32 75 fsdp BRAID_NVLINK_ON_LANE=1 CUDA_DEVICE_MAX_CONNECTIONS=32 --
train lane-c32-again 75 fsdp BRAID_NVLINK_ON_LANE=1 CUDA_DEVICE_MAX_CONNECTIONS=32 --
train lane-c1 60 fsdp BRAID_NVLINK_ON_LANE=1 CUDA_DEVICE_MAX_CONNECTIONS=1 --
train default-c1-fsdp 75 fsdp CUDA_DEVICE_MAX_CONNECTIONS=1 --
train default-c1-ddp 75 ddp-comm CUDA_DEVICE_MAX_CONNECTIONS=1 -- --bucket-cap-mb 256
train static-c1-ddp 75 ddp-comm CUDA_DEVICE_MAX_CONNECTIONS=1 BRAID_BALANCER=static -- --bucket-cap-mb 256
CUDA_DEVICE_MAX_CONNECTIONS=1 BRAID_BALANCER=static OUT=$OUT/rig RIG_PREFLIGHT=0 RIG_BUDGET=$((560 - SECONDS)) \
  RIG_GPUS_MAX=64M bash bench/rig/run.sh gpus 2 > "$OUT/rig-console.txt" 2>&1
echo "== rig static c1 rc=$? ($SECONDS s)"; grep -E "logs,|FAIL|hang|TIMEOUT" "$OUT/rig-console.txt" | head -10
cd "$OUT" && tar czf logs.tgz --exclude=logs.tgz $(ls -d */) && rm -rf $(ls -d */)
