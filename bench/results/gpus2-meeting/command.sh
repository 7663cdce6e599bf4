#!/usr/bin/env bash
# A two-GPU machine, carry .rig gpubundle (.rig/alt/base/libbraid.so: the library before this change).
# (1) host_cost_probe: what one meeting point of braid's copy engines costs the calling thread
#     (a write and a wait in one cuStreamBatchMemOp) and what exporting a buffer costs per call.
# (2) CUDA_DEVICE_MAX_CONNECTIONS=1 with every split call given a PCIe share (BRAID_BALANCER=static),
#     which hung DDP at its first split call before: braid now keeps to the NVLink share there.
# (3) host time per call (host_time_probe, a GPU per rank, all_reduce and all_gather, 3 rounds),
#     the library before (base) and after (a meeting point in one driver call; in place at two
#     ranks one copy and no fork), each with plain NCCL beside it.
# (4) nccl-tests -c 1 on the new library: braid's NVLink path forced (nvlink suite) and every
#     launch mode to 256M (gpus suite).
cd "$(dirname "$0")/../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0
{ nvidia-smi -L; nproc; } > "$OUT/gpu.txt" 2>&1
gpubundle/host_cost_probe 20000 > "$OUT/host_cost_probe.txt" 2>&1
echo "== host_cost_probe rc=$? ($SECONDS s)"; grep -E "Batch|Write|Wait|Ipc|Address|buffer id|EventRecord \(no" "$OUT/host_cost_probe.txt" | head -12
train() {  # NAME TIMEOUT MODEL [ENV=VALUE]... -- [train.py args]
  local name=$1 limit=$2 model=$3; shift 3
  local env=(); while (($#)) && [[ $1 != -- ]]; do env+=("$1"); shift; done; shift
  mkdir -p "$OUT/$name"
  env "${env[@]}" LD_PRELOAD=$PWD/gpubundle/lib/libbraid.so BRAID_TIMEOUT=10 BRAID_DEBUG=INFO BRAID_DEBUG_SUBSYS=INIT \
    BRAID_DEBUG_FILE="$OUT/$name/braid.%p.log" timeout "$limit" python3 -m torch.distributed.run --standalone \
    --nproc_per_node=2 bench/train/train.py --model "$model" --steps 12 --out "$OUT/$name/run.json" "$@" \
    > "$OUT/$name/run.log" 2>&1
  echo "== $name rc=$? ($SECONDS s)"; grep -E "^median" "$OUT/$name/run.log" | tail -1
  grep -h "WARN\|CUDA_DEVICE_MAX" "$OUT/$name"/braid.*.log 2>/dev/null | head -3
}
train static-c1-ddp 60 ddp-comm CUDA_DEVICE_MAX_CONNECTIONS=1 BRAID_BALANCER=static -- --bucket-cap-mb 256
train static-c1-fsdp 60 fsdp CUDA_DEVICE_MAX_CONNECTIONS=1 BRAID_BALANCER=static --
for lib in base new; do
  so=$PWD/gpubundle/lib/libbraid.so; [[ $lib == base ]] && so=$PWD/.rig/alt/base/libbraid.so
  RIG_BRAID_SO=$so OUT=$OUT/hosttime-$lib RIG_PREFLIGHT=0 RIG_BUDGET=100 RIG_HOSTTIME_PER_GPU=1 RIG_HOSTTIME_TOOLS=probe \
    RIG_HOSTTIME_COLLS="all_reduce all_gather" RIG_HOSTTIME_ROUNDS=3 \
    bash bench/rig/run.sh hosttime 2 > "$OUT/hosttime-$lib-console.txt" 2>&1
  echo "== hosttime $lib rc=$? ($SECONDS s)"; grep -E "^== host|sizes over" "$OUT/hosttime-$lib-console.txt"
done
OUT=$OUT/nvlink RIG_PREFLIGHT=0 RIG_BUDGET=120 bash bench/rig/run.sh nvlink 2 > "$OUT/nvlink-console.txt" 2>&1
echo "== nvlink rc=$? ($SECONDS s)"; grep -E "logs,|FAIL|CUT" "$OUT/nvlink-console.txt" | head -8
OUT=$OUT/rig RIG_PREFLIGHT=0 RIG_BUDGET=$((575 - SECONDS)) RIG_GPUS_MAX=256M bash bench/rig/run.sh gpus 2 > "$OUT/rig-console.txt" 2>&1
echo "== gpus rc=$? ($SECONDS s)"; grep -E "logs,|FAIL|CUT" "$OUT/rig-console.txt" | head -8
cd "$OUT" && tar czf logs.tgz --exclude=logs.tgz $(ls -d */) && rm -rf $(ls -d */)
