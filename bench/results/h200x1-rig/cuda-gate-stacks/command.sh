#!/usr/bin/env bash
# One-GPU machine (the one-GPU rig), carry .rig gpubundle. What still holds CUDA's lock past the
# CUDA gate: the rig-scale DDP case with the copy engines' meeting on the progress thread, every
# thread's stack when the lane watch fires (BRAID_WATCH_STACKS=1); and which CUDA entry points
# PyTorch's libraries import (the gate sees those bound through the dynamic runtime only).
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
torch_lib=$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
nv=$torch_lib/../../nvidia/cu13/lib
{ for l in "$nv"/libcublas.so.13 "$nv"/libcublasLt.so.13 "$torch_lib"/libtorch_cuda.so "$torch_lib"/libc10_cuda.so; do
    echo "== $l"; ldd "$l" | grep -E "cudart|libcuda"; nm -D --undefined-only "$l" | grep -E " (cuda|cu)[A-Z]" | awk '{print $2}' | tr '\n' ' '; echo; done; } > "$OUT/imports.txt" 2>&1
(export BRAID_NVLINK_PATH=copy BRAID_PEER_SAME_GPU=1 BRAID_NVLINK_COPY_MIN_BYTES=1048576 BRAID_NVLINK_ON_LANE=1 BRAID_DEBUG=INFO \
   BRAID_WATCH_STACKS=1 BRAID_TIMEOUT=8 CASES=ddp-comm-b25
 OUT=$OUT/run WRAPPER=bench/rig/one-gpu-rank.sh RANKS=2 REPS=1 TIMEOUT=45 timeout 120 bash bench/train/run.sh) > "$OUT/console.txt" 2>&1
echo "rc=$?"; grep -E "^run |SUMMARY" "$OUT/console.txt"
cd "$OUT" && tar czf logs.tgz run console.txt && rm -rf run
