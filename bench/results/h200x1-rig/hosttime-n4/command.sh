#!/usr/bin/env bash
# One-GPU machine (the one-GPU rig), carry .rig gpubundle. Host time per call at 4 ranks, default
# settings (host_time_probe: each ncclAllReduce timed alone, median of 30 per size; plain and braid
# alternating), three rounds; then one round with BRAID_DISABLE=1 (libbraid.so preloaded but
# passing every call through), to tell the shim's own cost from braid's path's.
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > "$OUT/gpu.txt"; nproc >> "$OUT/gpu.txt"
(OUT=$OUT/default RIG_PREFLIGHT=0 RIG_BUDGET=340 RIG_HOSTTIME_TOOLS=probe RIG_HOSTTIME_ROUNDS=3 bash bench/rig/run.sh hosttime 4) > "$OUT/default-console.txt" 2>&1
echo "default rc=$? at ${SECONDS}s"; grep -E "OVER|sizes over|logs," "$OUT/default-console.txt" | tail -8
left=$((580 - SECONDS))
(OUT=$OUT/disabled BRAID_DISABLE=1 RIG_PREFLIGHT=0 RIG_BUDGET=$left RIG_HOSTTIME_TOOLS=probe RIG_HOSTTIME_ROUNDS=2 bash bench/rig/run.sh hosttime 4) > "$OUT/disabled-console.txt" 2>&1
echo "disabled rc=$? at ${SECONDS}s"; grep -E "OVER|sizes over|logs," "$OUT/disabled-console.txt" | tail -8
cd "$OUT" && tar czf logs.tgz default disabled 2>/dev/null; rm -rf default disabled
