#!/usr/bin/env bash
# Host time per call at 2 ranks with the events made ahead (the join ring withdrawn); the compete
# suite (braid's net plugin against NCCL's socket transport under a competing flow on one NIC, each
# rank a namespaced host with tc-shaped veth NICs); the net suite with one and two progress threads
# per NIC (BRAID_NET_THREADS) beside NCCL's socket transport. Carry .rig and gpubundle.
set -u
cd "$(dirname "$0")/../../../.." 2>/dev/null || true
O=${OUT:-/tmp/out}; mkdir -p "$O"
OUT=$O RIG_PREFLIGHT=0 RIG_BUDGET=${RIG_BUDGET:-540} RIG_NET_VARIANTS="plain-socket braid-net-1nic braid-net-1nic-2thr" \
  bash bench/rig/run.sh hosttime 2 compete 2 net 2 > "$O/rig-console.txt" 2>&1
echo "rig rc=$?"
grep -E "OVER|sizes over|logs,|FAIL|SKIPPED|rounds\)" "$O/rig-console.txt" | head -40
cat "$O/compete_table.txt" 2>/dev/null | head -40
