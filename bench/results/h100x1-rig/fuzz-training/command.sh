#!/usr/bin/env bash
# Fuzz, PyTorch checks, training on the rig; logs packed into $OUT.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
FUZZ_BIN=gpubundle/shim_argument_fuzz_gpu RIG_PREFLIGHT=0 RIG_BUDGET=150 OUT=/tmp/o1 bash bench/rig/run.sh fuzz 2>&1 | tail -12
export NCCL_NVLS_ENABLE=0
W=$PWD/bench/rig/one-gpu-rank.sh
mkdir -p /tmp/o2
for how in plain braid; do
  pre=""; [ $how = braid ] && pre="LD_PRELOAD=$PWD/gpubundle/lib/libbraid.so"
  timeout 150 env $pre BRAID_DEBUG=WARN python3 -m torch.distributed.run --standalone --nproc_per_node=2 --no-python bash $W python3 bench/checks/torch_collectives.py > /tmp/o2/torch_$how.log 2>&1; echo "torch $how rc=$?"
  grep -hE "WRONG|world" /tmp/o2/torch_$how.log | head -5
done
WRAPPER=bench/rig/one-gpu-rank.sh RANKS=2 REPS=1 OUT=/tmp/o3 timeout 300 bash bench/train/run.sh 2>&1 | tail -25
tar -czf $OUT/logs.tgz -C /tmp o1 o2 o3 2>/dev/null
