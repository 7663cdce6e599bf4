#!/usr/bin/env bash
# One-GPU machine (the one-GPU rig), carry .rig gpubundle. The drop-in's CUDA gate
# (libbraid-cuda-gate.so) against the DDP run that deadlocks with the copy engines' meeting on the
# progress thread (BRAID_NVLINK_ON_LANE=1, lazy module loading, no CUDA_MODULE_LOADING=EAGER):
# (1) how PyTorch links the CUDA runtime (the gate sees a dynamically linked one only);
# (2) that run with the gate (the default) must pass; (3) the same run with BRAID_CUDA_GATE=0, the
# control, must end in the lane watch's give-up; (4) every training case with the meeting on the
# progress thread and the gate, losses compared step by step.
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > "$OUT/gpu.txt"
torch_lib=$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
{ for l in "$torch_lib"/libc10_cuda.so "$torch_lib"/libtorch_cuda.so; do echo "== $l"; ldd "$l" | grep -E "cudart|cublas"; done; } > "$OUT/torch-cudart.txt" 2>&1
cat "$OUT/torch-cudart.txt"
for gate in 1 0; do
  start=$(date +%s)
  (export BRAID_TIMEOUT=10 BRAID_CUDA_GATE=$gate; VARIANTS=lane OUT=$OUT/ddp-gate$gate timeout 150 \
     bash bench/results/h100x1-rig/lane-ddp-hang/command.sh) > "$OUT/ddp-gate$gate-console.txt" 2>&1
  echo "ddp lane, BRAID_CUDA_GATE=$gate: $(( $(date +%s) - start )) s"; grep -E "^run |SUMMARY" "$OUT/ddp-gate$gate-console.txt" | head -4
done
(export BRAID_NVLINK_PATH=copy BRAID_PEER_SAME_GPU=1 BRAID_NVLINK_COPY_MIN_BYTES=1048576 BRAID_NVLINK_ON_LANE=1 BRAID_DEBUG=INFO
 OUT=$OUT/train-lane WRAPPER=bench/rig/one-gpu-rank.sh RANKS=2 REPS=1 timeout 300 bash bench/train/run.sh) > "$OUT/train-lane-console.txt" 2>&1
echo "train (meeting on the progress thread) rc=$?"; grep -E "^run |SUMMARY|done in" "$OUT/train-lane-console.txt"
grep -h "CUDA gate" "$OUT"/train-lane/train/braid.*.log 2>/dev/null | head -2
cd "$OUT" && tar czf logs.tgz ddp-gate1 ddp-gate0 train-lane *-console.txt && rm -rf ddp-gate1 ddp-gate0 train-lane
