#!/usr/bin/env bash
# One-GPU machine (the one-GPU rig), carry .rig gpubundle. The drop-in now sets
# CUDA_MODULE_LOADING=EAGER where unset (BRAID_EAGER_MODULE_LOADING) and keeps braid's PCIe share
# off where a process loads lazily all the same. In one call:
#  1. the training cases with every split call split (BRAID_BALANCER=static, share 0.25): FSDP2
#     failed so under lazy loading (../fsdp-static-lane/);
#  2. FSDP2 the same way with CUDA_MODULE_LOADING=LAZY set by the application: braid must say its
#     PCIe share is off, and pass;
#  3. bench/module_loading_cost.py: what eager loading costs a PyTorch process;
#  4. host time per call at default settings, 2 ranks (host_time_probe, one round);
#  5. the training cases at default settings.
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > "$OUT/gpu.txt"; nproc >> "$OUT/gpu.txt"
train() {  # name, timeout, extra env...
  local name=$1 limit=$2; shift 2
  (env "$@" OUT=$OUT/$name WRAPPER=bench/rig/one-gpu-rank.sh RANKS=2 REPS=1 BRAID_DEBUG=INFO BRAID_DEBUG_SUBSYS=INIT \
     timeout "$limit" bash bench/train/run.sh) > "$OUT/$name-console.txt" 2>&1
  echo "$name rc=$? at ${SECONDS}s"; grep -E "^run |SUMMARY|equal|differ" "$OUT/$name-console.txt" | head -12
  grep -rh "PCIe share is off\|stopped responding" "$OUT/$name" 2>/dev/null | sort | uniq -c | head -4
}
train static 250 BRAID_BALANCER=static BRAID_STATIC_SHARE=0.25 BRAID_TIMEOUT=10
train static-lazy-fsdp 100 CASES=fsdp CUDA_MODULE_LOADING=LAZY BRAID_BALANCER=static BRAID_STATIC_SHARE=0.25 BRAID_TIMEOUT=10
timeout 120 python3 bench/module_loading_cost.py --reps 3 > "$OUT/cost.txt" 2>&1; echo "cost rc=$? at ${SECONDS}s"; tail -4 "$OUT/cost.txt"
(OUT=$OUT/hosttime RIG_PREFLIGHT=0 RIG_BUDGET=60 RIG_HOSTTIME_TOOLS=probe RIG_HOSTTIME_ROUNDS=1 bash bench/rig/run.sh hosttime 2) > "$OUT/hosttime-console.txt" 2>&1
echo "hosttime rc=$? at ${SECONDS}s"; grep -E "over|median|rows" "$OUT/hosttime-console.txt" | tail -6
left=$((570 - SECONDS)); [ "$left" -gt 60 ] && train default "$left"
cd "$OUT" && tar czf logs.tgz static static-lazy-fsdp hosttime default 2>/dev/null; rm -rf static static-lazy-fsdp hosttime default
