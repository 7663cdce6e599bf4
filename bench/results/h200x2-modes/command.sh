#!/usr/bin/env bash
# A two-GPU machine (nvidia-h100-x2; it may come as 2x H200), carry .rig gpubundle; braid at
# 67a70b7 (its device-wide calls wait at most 1 s for the lanes; the lane watch's give-up): the
# first runs of the rig's gpus suite, nccl-tests -c 1 from 1 KB to 1 GiB with a thread per GPU
# (-t 2 -g 1) and a process per GPU (MPI), plain NCCL beside braid, as far as a short budget goes.
cd "$(dirname "$0")/../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > "$OUT/gpu.txt"; nvidia-smi topo -m > "$OUT/topo.txt" 2>&1
OUT=$OUT RIG_PREFLIGHT=0 RIG_BUDGET=130 bash bench/rig/run.sh gpus 2 > "$OUT/rig-console.txt" 2>&1
echo "rig rc=$?"; grep -E "^== |logs,|FAIL" "$OUT/rig-console.txt" | head; head -c 3000 "$OUT/busbw_table.txt" 2>/dev/null
