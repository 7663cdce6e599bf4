#!/usr/bin/env bash
# PyTorch's collectives through the drop-in on the one-GPU rig (2 ranks), with several
# communicators per process (two subgroups made by ncclCommSplit beside the default group, calls
# interleaved), blocking and non-blocking communicators (TORCH_NCCL_USE_COMM_NONBLOCKING), plain
# NCCL then braid: every result checked exactly and its hash compared between plain and braid.
# From the repo root, carry gpubundle.
set -u
cd "$(dirname "$0")/../../../.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/t"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NCCL_NVLS_ENABLE=0 CHECK_SIZES=${CHECK_SIZES:-4096,16777216} HOST_CALLS=10
W=$PWD/bench/rig/one-gpu-rank.sh
for nb in 0 1; do
  for how in plain braid; do
    pre=(); [ $how = braid ] && pre=(LD_PRELOAD=$PWD/gpubundle/lib/libbraid.so)
    log=$OUT/t/torch_${how}_nonblocking$nb.log
    timeout 150 env "${pre[@]}" TORCH_NCCL_USE_COMM_NONBLOCKING=$nb BRAID_DEBUG=WARN python3 -m torch.distributed.run \
      --standalone --nproc_per_node=2 --no-python bash "$W" python3 bench/checks/torch_collectives.py > "$log" 2>&1
    echo "torch $how nonblocking=$nb rc=$?"
  done
  grep -hE "^(ok|WRONG|diff)" "$OUT/t/torch_plain_nonblocking$nb.log" > /tmp/p; grep -hE "^(ok|WRONG|diff)" "$OUT/t/torch_braid_nonblocking$nb.log" > /tmp/b
  echo "nonblocking=$nb: checks plain=$(wc -l < /tmp/p) braid=$(wc -l < /tmp/b), wrong braid=$(grep -c WRONG /tmp/b), lines differing: $(diff /tmp/p /tmp/b | grep -c '^[<>]')"
done
grep -h '"world"' "$OUT"/t/torch_*.log
tar -czf "$OUT/torch-logs.tar.gz" -C "$OUT" t && rm -rf "$OUT/t"
