#!/usr/bin/env bash
# One device call on a machine with two GPUs (nvidia-h100-x2), carrying .rig and gpubundle:
# nccl-tests in its launch modes on the two GPUs, plain NCCL beside braid (gpus 2), after the fix
# of the GPU braid recorded for a communicator made inside a group.
set -u
cd "$(dirname "$0")/../../.." 2>/dev/null || true
O=${OUT:-/tmp/out}; mkdir -p "$O"
nvidia-smi topo -m > "$O/topo.txt" 2>&1
OUT=$O RIG_PREFLIGHT=0 RIG_BUDGET=${RIG_BUDGET:-540} bash bench/rig/run.sh gpus 2 > "$O/rig-console.txt" 2>&1
echo "rig rc=$?"
grep -E "^== |rc=(1[0-9][0-9]|[1-9]) |SKIPPED|logs,|FAIL" "$O/rig-console.txt" | head -40
head -c 7000 "$O/busbw_table.txt" 2>/dev/null
