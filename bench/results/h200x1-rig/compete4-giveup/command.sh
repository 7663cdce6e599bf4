#!/usr/bin/env bash
# One-GPU machine (the one-GPU rig), carry .rig gpubundle. (1) The compete suite at 4 ranks: 4
# processes as 4 namespaced hosts with 2 tc-shaped NICs each, braid's net plugin against NCCL's
# socket transport with and without a competing flow on nic0. (2) The DDP run that deadlocks with
# BRAID_NVLINK_ON_LANE=1, with PyTorch's own teardown made prompt (no flight-recorder dump wait), to
# see every process end with an error once braid's lane watch gives up (2 x BRAID_TIMEOUT).
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > "$OUT/gpu.txt"
OUT=$OUT RIG_PREFLIGHT=0 RIG_BUDGET=330 bash bench/rig/run.sh compete 4 > "$OUT/rig-console.txt" 2>&1
echo "rig rc=$?"; cat "$OUT/compete_table.txt" 2>/dev/null | head -30
start=$(date +%s)
(export BRAID_TIMEOUT=10 TORCH_NCCL_DUMP_ON_TIMEOUT=0 TORCH_NCCL_ENABLE_MONITORING=0
 VARIANTS=lane OUT=$OUT/ddp timeout 150 bash bench/results/h100x1-rig/lane-ddp-hang/command.sh) > "$OUT/ddp-console.txt" 2>&1
echo "ddp lane: $(( $(date +%s) - start )) s"; grep -E "^run |SUMMARY" "$OUT/ddp-console.txt" | head -3
cd "$OUT" && tar czf ddp.tgz ddp ddp-console.txt && rm -rf ddp ddp-console.txt
