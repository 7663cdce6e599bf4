#!/usr/bin/env bash
# The same warm 4-GPU machine right after ../command.sh: the nvlink suite on two of its GPUs (two
# ranks, where braid's NVLink path runs by default), the same build.
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}; export NCCL_NVLS_ENABLE=0
OUT=$OUT RIG_PREFLIGHT=0 RIG_BUDGET=100 bash bench/rig/run.sh nvlink 2 > "$OUT/rig-console.txt" 2>&1
echo "rig rc=$?"; grep -E "^== |#wrong|[0-9]{8,} |logs," "$OUT/rig-console.txt" | head -30
