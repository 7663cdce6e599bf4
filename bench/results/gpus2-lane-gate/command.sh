#!/usr/bin/env bash
# A two-GPU machine, carry .rig gpubundle. With the CUDA gate also waiting for the GPU work braid's
# progress threads queued (a device-wide call no longer meets it pending), everything with the copy
# engines' meeting on the progress thread (BRAID_NVLINK_ON_LANE=1, set for every run below):
# (1) FSDP2 under CUDA's lazy module loading, which hung at its first step; (2) the rig's gpus
# suite, nccl-tests -c 1 in every launch mode, plain beside braid, 1K to 256M; (3) host time per
# call, each call timed alone, all_reduce and all_gather, 1 round; (4) training, plain and braid
# alternating, one pair per case, in what time is left.
cd "$(dirname "$0")/../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0 BRAID_NVLINK_ON_LANE=1
{ nvidia-smi -L; nproc; } > "$OUT/gpu.txt" 2>&1
mkdir -p "$OUT/fsdp-lazy"
LD_PRELOAD=$PWD/gpubundle/lib/libbraid.so BRAID_TIMEOUT=10 BRAID_WATCH_STACKS=1 BRAID_DEBUG=WARN \
  BRAID_DEBUG_FILE="$OUT/fsdp-lazy/braid.%p.log" timeout 60 python3 -m torch.distributed.run --standalone \
  --nproc_per_node=2 bench/train/train.py --model fsdp --steps 12 --out "$OUT/fsdp-lazy/fsdp.json" \
  > "$OUT/fsdp-lazy/fsdp.log" 2>&1
echo "== fsdp lazy rc=$? ($SECONDS s)"; grep -E "^median" "$OUT/fsdp-lazy/fsdp.log"; grep -h WARN "$OUT"/fsdp-lazy/braid.*.log | head -3
OUT=$OUT/rig RIG_PREFLIGHT=0 RIG_BUDGET=150 RIG_GPUS_MAX=256M bash bench/rig/run.sh gpus 2 > "$OUT/rig-console.txt" 2>&1
echo "== rig rc=$? ($SECONDS s)"; grep -E "logs,|FAIL" "$OUT/rig-console.txt" | head -10
OUT=$OUT/hosttime RIG_PREFLIGHT=0 RIG_BUDGET=80 RIG_HOSTTIME_PER_GPU=1 RIG_HOSTTIME_TOOLS=probe \
  RIG_HOSTTIME_COLLS="all_reduce all_gather" RIG_HOSTTIME_ROUNDS=1 \
  bash bench/rig/run.sh hosttime 2 > "$OUT/hosttime-console.txt" 2>&1
echo "== hosttime rc=$? ($SECONDS s)"; grep -E "^== host|sizes over" "$OUT/hosttime-console.txt"
left=$((575 - SECONDS))
(OUT=$OUT/train CASES="${CASES:-fsdp ddp-comm-b256 ddp-comm-b25 fsdp-compiled ddp-comm-compiled ddp-compute}" REPS=1 \
  TIMEOUT=120 timeout $left bash bench/train/run.sh) > "$OUT/train-console.txt" 2>&1
echo "== train rc=$? ($SECONDS s)"; grep -E "^SUMMARY|timed out" "$OUT/train-console.txt"
cd "$OUT" && tar czf logs.tgz fsdp-lazy rig hosttime train && rm -rf fsdp-lazy rig hosttime train
