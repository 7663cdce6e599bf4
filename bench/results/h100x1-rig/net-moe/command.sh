#!/usr/bin/env bash
# braid's NCCL net plugin (libnccl-net-braid.so) against NCCL's own socket transport on the
# one-GPU rig (2 processes as 2 nodes, P2P/SHM off, 1 and 2 loopback "NICs", unshaped and shaped),
# then the MoE dispatch/combine benchmark (all_to_all_single, Zipf skews) plain against braid.
# From the repo root, carry .rig and gpubundle.
set -u
cd "$(dirname "$0")/../../../.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
OUT=$OUT/net RIG_PREFLIGHT=0 RIG_BUDGET=340 bash bench/rig/run.sh net 2 > "$OUT/net-console.txt" 2>&1
grep -E "^(FAIL|==)" "$OUT/net-console.txt" | tail -6; cat "$OUT/net/net_table.txt" 2>/dev/null | tail -40
source bench/gpu_env.sh >/dev/null 2>&1
WRAPPER=bench/rig/one-gpu-rank.sh RANKS=2 REPS=1 timeout 200 bash bench/moe/run.sh > "$OUT/moe-console.txt" 2>&1
echo "moe rc=$?"; tail -20 "$OUT/moe-console.txt"
tar -czf "$OUT/moe.tgz" -C "$OUT" moe 2>/dev/null && rm -rf "$OUT/moe"
