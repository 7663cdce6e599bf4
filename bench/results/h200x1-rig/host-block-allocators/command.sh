#!/usr/bin/env bash
# One-GPU machine, carry gpubundle: bench/host_block_probe.cu with PyTorch's allocator calls added
# (cudaMalloc of 2 and 20 MB, cudaFree of 2 MB, cudaMallocAsync, cuMemCreate/cuMemMap as expandable
# segments do, cudaHostRegister, stream and event creation): which of them, made while a stream
# waits on a host word, block another thread's CUDA calls.
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > "$OUT/gpu.txt"
(timeout 150 gpubundle/host_block_probe; echo "probe rc=$?") > "$OUT/host_block.txt" 2>&1
grep -v "^case:" "$OUT/host_block.txt"
