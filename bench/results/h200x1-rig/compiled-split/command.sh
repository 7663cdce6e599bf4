#!/usr/bin/env bash
# One-GPU machine (the one-GPU rig), carry .rig gpubundle. torch.compile loads Triton's kernels
# through the driver (cuModuleLoadData), which braid's CUDA gate does not see and eager loading
# does not remove: the compiled training cases with every split call split (BRAID_BALANCER=static,
# BRAID_STATIC_SHARE=0.25, so braid's progress thread queues PCIe shares while Triton loads), 2
# ranks, one pair each; then at default settings as far as the call's time allows.
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > "$OUT/gpu.txt"; nproc >> "$OUT/gpu.txt"
train() {  # name, timeout, extra env...
  local name=$1 limit=$2; shift 2
  (env "$@" OUT=$OUT/$name WRAPPER=bench/rig/one-gpu-rank.sh RANKS=2 REPS=1 TIMEOUT=120 CASES="fsdp-compiled ddp-comm-compiled" \
     BRAID_DEBUG=INFO BRAID_DEBUG_SUBSYS=INIT BRAID_TIMEOUT=10 timeout "$limit" bash bench/train/run.sh) > "$OUT/$name-console.txt" 2>&1
  echo "$name rc=$? at ${SECONDS}s"; grep -E "^run |^SUMMARY" "$OUT/$name-console.txt" | head -8
  grep -rh "stopped responding\|PCIe share is off\|queued by braid's progress thread\|WARN" "$OUT/$name" 2>/dev/null | sed 's/^.*BRAID/BRAID/' | sort | uniq -c | head -6
}
train forced 250 BRAID_BALANCER=static BRAID_STATIC_SHARE=0.25
left=$((330 - SECONDS)); [ "$left" -gt 100 ] && train default "$left"
cd "$OUT" && tar czf logs.tgz forced default 2>/dev/null; rm -rf forced default
