#!/usr/bin/env bash
# One-GPU machine (the one-GPU rig), carry .rig gpubundle. Why NCCL's own call runs slower inside
# braid where every split call is handed on (call-5/): the progress thread's host reductions
# (CPU memory traffic) or its CUDA calls. Every split call handed on (static share 0.25) with
# reductions on the host (BRAID_REDUCE_PLACEMENT=host, HyLink's) and on the GPU (BRAID_REDUCE_PLACEMENT=device),
# each call timed alone (host_time_probe), profile on; 2 ranks 2 rounds, 4 ranks 1 round.
cd "$(dirname "$0")/../../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > "$OUT/gpu.txt"; nproc >> "$OUT/gpu.txt"
export RIG_PREFLIGHT=0 RIG_HOSTTIME_TOOLS=probe BRAID_BALANCER=static BRAID_STATIC_SHARE=0.25
export BRAID_DEBUG=INFO BRAID_DEBUG_SUBSYS=INIT BRAID_CALLER_PROFILE=1
{ for placement in host device; do
    OUT=$OUT/$placement-n2 BRAID_REDUCE_PLACEMENT=$placement RIG_HOSTTIME_ROUNDS=2 RIG_BUDGET=110 bash bench/rig/run.sh hosttime 2
    OUT=$OUT/$placement-n4 BRAID_REDUCE_PLACEMENT=$placement RIG_HOSTTIME_ROUNDS=1 RIG_BUDGET=150 bash bench/rig/run.sh hosttime 4
  done; } > "$OUT/rig-console.txt" 2>&1
echo "rig rc=$?"; grep -E "OVER|sizes over|logs,|FAIL|SKIPPED|rounds\)|^==|rc=" "$OUT/rig-console.txt" | head -120
for d in host-n2 host-n4 device-n2 device-n4; do
  tar -xzf "$OUT/$d/rig-logs.tar.gz" -O 2>/dev/null | grep -h "split calls" | sed "s/^/$d: /" >> "$OUT/profiles.txt"
  { echo "== $d"; cat "$OUT/$d/summary.txt"; } >> "$OUT/summaries.txt"
done
tar -czf "$OUT/rig-logs.tar.gz" -C "$OUT" host-n2 host-n4 device-n2 device-n4 && rm -rf "${OUT:?}"/host-n? "${OUT:?}"/device-n?
