#!/usr/bin/env bash
# One-GPU machine (the one-GPU rig), carry .rig gpubundle: nccl-tests' launch modes through braid
# at 2 and 4 ranks, -c 1, 256 B to 256 MB (bench/rig/run.sh's modes suite: -G 1, -u 1, -R 1,
# -y 1, -z 1, -m 8 on all_reduce, all_gather, reduce_scatter; alltoall, sendrecv, gather, scatter,
# hypercube).
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > "$OUT/gpu.txt"
OUT=$OUT RIG_PREFLIGHT=0 RIG_BUDGET=560 bash bench/rig/run.sh modes 2 modes 4 > "$OUT/rig-console.txt" 2>&1
echo "rig rc=$?"; grep -E "logs,|FAIL|SKIPPED|^==" "$OUT/rig-console.txt" | head -20
