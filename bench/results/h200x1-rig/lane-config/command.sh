#!/usr/bin/env bash
# One-GPU machine (the one-GPU rig), carry .rig gpubundle. braid's progress-thread communicator now
# inherits the application's ncclConfig_t. At 2 ranks, every split call split
# (BRAID_BALANCER=static, BRAID_STATIC_SHARE=0.25), so that communicator is made:
#  1. FSDP2 with a config set as Megatron sets it (train.py --nccl-config), NCCL's INFO on: NCCL's
#     "Comm config ... set to" lines must show the same fields for braid's communicator;
#  2. every training case with that config, plain and braid: losses equal;
#  3. nccl-tests' own check: modes 2, correctness 2, faults 2 (nccl-tests passes no config).
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > "$OUT/gpu.txt"; nproc >> "$OUT/gpu.txt"
export BRAID_BALANCER=static BRAID_STATIC_SHARE=0.25 BRAID_TIMEOUT=10
config=max_ctas=16,min_ctas=2,cga_cluster_size=2
train() {  # name, timeout, extra env...
  local name=$1 limit=$2; shift 2
  (env "$@" OUT=$OUT/$name WRAPPER=bench/rig/one-gpu-rank.sh RANKS=2 REPS=1 BRAID_DEBUG=INFO BRAID_DEBUG_SUBSYS=INIT \
     timeout "$limit" bash bench/train/run.sh --nccl-config "$config") > "$OUT/$name-console.txt" 2>&1
  echo "$name rc=$? at ${SECONDS}s"; grep -E "^SUMMARY" "$OUT/$name-console.txt" | head -8
}
train fsdp-nccl-info 90 CASES=fsdp NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV
grep -rh "Comm config\|braid progress lane\|queued by braid's progress thread" "$OUT/fsdp-nccl-info" "$OUT/fsdp-nccl-info-console.txt" \
  | sed 's/^[^ ]*:[0-9]*:[0-9]* //' | sort | uniq -c | head -20
train all-cases 200
left=$((575 - SECONDS))
(OUT=$OUT/rig RIG_PREFLIGHT=0 RIG_BUDGET=$left bash bench/rig/run.sh modes 2 faults 2 correctness 2) > "$OUT/rig-console.txt" 2>&1
echo "rig rc=$? at ${SECONDS}s"; grep -E "logs,|^FAIL|SKIP" "$OUT/rig-console.txt" | tail -6
mv "$OUT/rig/rig-logs.tar.gz" "$OUT/rig-logs.tar.gz" 2>/dev/null; cp "$OUT/rig/summary.txt" "$OUT/rig-summary.txt" 2>/dev/null
cd "$OUT" && tar czf logs.tgz fsdp-nccl-info all-cases 2>/dev/null; rm -rf fsdp-nccl-info all-cases rig
