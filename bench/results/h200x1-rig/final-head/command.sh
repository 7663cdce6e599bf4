#!/usr/bin/env bash
# One-GPU machine (the one-GPU rig), carry .rig gpubundle. Issue 18's host-time line on the code as
# it stands (the progress thread's communicator now inherits the application's config): host time
# per call (host_time_probe, each call timed alone, plain and braid alternating) at 2 ranks with
# default settings, 3 rounds; at 4 ranks with every split call split (BRAID_BALANCER=static,
# BRAID_STATIC_SHARE=0.25: NCCL's share on the progress thread), 1 round; then a dying rank at 2
# and 4 with default settings.
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > "$OUT/gpu.txt"; nproc >> "$OUT/gpu.txt"
export RIG_PREFLIGHT=0 RIG_HOSTTIME_TOOLS=probe
(OUT=$OUT/hosttime2 RIG_BUDGET=150 RIG_HOSTTIME_ROUNDS=3 bash bench/rig/run.sh hosttime 2) > "$OUT/hosttime2-console.txt" 2>&1
echo "hosttime2 rc=$? at ${SECONDS}s"; grep -E "sizes over|logs," "$OUT/hosttime2-console.txt"
(OUT=$OUT/hosttime4-split BRAID_BALANCER=static BRAID_STATIC_SHARE=0.25 RIG_BUDGET=150 RIG_HOSTTIME_ROUNDS=1 \
   bash bench/rig/run.sh hosttime 4) > "$OUT/hosttime4-split-console.txt" 2>&1
echo "hosttime4-split rc=$? at ${SECONDS}s"; grep -E "sizes over|logs," "$OUT/hosttime4-split-console.txt"
left=$((560 - SECONDS))
(OUT=$OUT/dying RIG_BUDGET=$left bash bench/rig/run.sh dying 2 dying 4) > "$OUT/dying-console.txt" 2>&1
echo "dying rc=$? at ${SECONDS}s"; grep -E "logs,|abort" "$OUT/dying-console.txt" | tail -8
cd "$OUT" && tar czf logs.tgz hosttime2 hosttime4-split dying 2>/dev/null; rm -rf hosttime2 hosttime4-split dying
