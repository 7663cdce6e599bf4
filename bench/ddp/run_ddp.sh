#!/usr/bin/env bash
# Unmodified-PyTorch DDP check: the same deterministic training run (bench/ddp/train_ddp.py) once
# on plain NCCL and once with braid's drop-in preloaded, then compare_losses.py on the two loss
# curves. Run on the GPU machine from the repository root:  bash bench/ddp/run_ddp.sh
# Extra arguments go to train_ddp.py (e.g. --steps 50). Output under $OUT (bench/gpu_env.sh).
set -u
source "$(dirname "$0")/../gpu_env.sh"
here=$(dirname "$0")
n=$(nvidia-smi -L | wc -l)
echo "## $n GPUs, OUT=$OUT"
rm -f "$OUT"/ddp_nccl.json "$OUT"/ddp_braid.json "$OUT"/braid_ddp.*.log

echo "## plain NCCL"
timeout 240 python3 -m torch.distributed.run --standalone --nproc_per_node="$n" \
  "$here/train_ddp.py" --out "$OUT/ddp_nccl.json" "$@" >"$OUT/ddp_nccl.log" 2>&1
echo "rc nccl=$?"
tail -5 "$OUT/ddp_nccl.log"

# SHIM is in the subsystem list for the drop-in's start-up line (which real NCCL it found), the
# proof that the preload took effect.
echo "## braid (LD_PRELOAD=$PWD/$G/lib/libbraid.so)"
LD_PRELOAD=$PWD/$G/lib/libbraid.so BRAID_DEBUG=INFO BRAID_DEBUG_SUBSYS=INIT,COLL,BALANCE,SHIM \
  BRAID_DEBUG_FILE="$OUT/braid_ddp.%p.log" BRAID_SPLIT_TRACE="$OUT/ddp_split_trace.jsonl" \
  timeout 240 python3 -m torch.distributed.run --standalone --nproc_per_node="$n" \
  "$here/train_ddp.py" --out "$OUT/ddp_braid.json" "$@" >"$OUT/ddp_braid.log" 2>&1
echo "rc braid=$?"
tail -5 "$OUT/ddp_braid.log"

echo "## compare"
python3 "$here/compare_losses.py" "$OUT/ddp_nccl.json" "$OUT/ddp_braid.json"
echo "rc compare=$?"

echo "## braid logs"
logs=$(ls "$OUT"/braid_ddp.*.log 2>/dev/null | wc -l)
echo "$logs braid log files (no files: the preload did not take effect, or logging is off)"
grep -h "drop-in" "$OUT"/braid_ddp.*.log 2>/dev/null | head -2
echo "$(cat "$OUT"/braid_ddp.*.log 2>/dev/null | grep -c split) lines mention split; the first 20:"
grep -h "split" "$OUT"/braid_ddp.*.log 2>/dev/null | head -20
