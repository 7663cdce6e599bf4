#!/usr/bin/env bash
# One device call on a machine with two GPUs (nvidia-h100-x2), carrying .rig and gpubundle:
# nccl-tests in its launch modes on the two GPUs, plain NCCL beside braid (gpus 2); then on GPU 0
# as the one-GPU rig: a failure injected at each step of braid's setup and run (faults 2), and
# braid's routed all-to-all with relays on a 4-GPU mesh topology, 4 ranks (route 4, alltoall only).
set -u
cd "$(dirname "$0")/../../.." 2>/dev/null || true
O=${OUT:-/tmp/out}; mkdir -p "$O"
nvidia-smi topo -m > "$O/topo.txt" 2>&1
OUT=$O RIG_PREFLIGHT=0 RIG_BUDGET=${RIG_BUDGET:-530} RIG_ROUTE_COLLS=alltoall RIG_ROUTE_DYING=0 \
  RIG_ROUTE_SIZES="-b 1K -e 64M -f 4" bash bench/rig/run.sh gpus 2 faults 2 route 4 > "$O/rig-console.txt" 2>&1
echo "rig rc=$?"
grep -E "^== |rc=(1[0-9][0-9]|[1-9]) |SKIPPED|logs,|FAIL" "$O/rig-console.txt" | head -40
head -c 6000 "$O/busbw_table.txt" 2>/dev/null
cat "$O/route_table.txt" 2>/dev/null | head -20
