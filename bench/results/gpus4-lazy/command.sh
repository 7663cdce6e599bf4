#!/usr/bin/env bash
# nvidia-h200-x4, carry .rig gpubundle. Issue 41 with CUDA's lazy module loading left as it is:
# (1) what braid's INIT lines say it made, at 2 and 4 ranks (a 256 MB all_reduce: braid's copy
# engines take it at 2 ranks); (2) host time per call (bench/host_time_probe, each call timed
# alone), a GPU per rank, 2 and 4 ranks, plain and braid alternating, 2 rounds; (3) PyTorch training
# on GPUs 0,1 (DDP with 25 and 256 MB buckets, FSDP2, FSDP2 under torch.compile), one pair each,
# losses compared step by step.
cd "$(dirname "$0")/../../.." || exit 2
source bench/gpu_env.sh
mkdir -p "$OUT/logs"
for n in 2 4; do
  CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((n - 1))) BRAID_DEBUG=INFO timeout 60 python3 bench/process_cost.py --ranks "$n" \
    --pairs 1 --calls 5 --mb 256 --braid gpubundle/lib/libbraid.so --logs "$OUT/logs/info" > /dev/null 2>&1
  echo "INFO n=$n:"; grep -h "multipath\|braid holds" "$OUT/logs/info/cost.n$n.braid.0.rank0.log" | cut -c1-400 | head -8
done
for n in 2 4; do
  CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((n - 1))) OUT=$OUT/hosttime$n RIG_PREFLIGHT=0 RIG_BUDGET=110 RIG_HOSTTIME_PER_GPU=1 \
    RIG_HOSTTIME_ROUNDS=2 RIG_HOSTTIME_TOOLS=probe RIG_HOSTTIME_COLLS="all_reduce all_gather" \
    bash bench/rig/run.sh hosttime "$n" > "$OUT/hosttime$n-console.txt" 2>&1
  echo "hosttime n=$n rc=$?"; grep -A40 "== hosttime" "$OUT/hosttime$n-console.txt" | grep -v "^SKIPPED" | head -45
done
(CUDA_VISIBLE_DEVICES=0,1 OUT=$OUT/train CASES="ddp-comm-b25 ddp-comm-b256 fsdp fsdp-compiled" REPS=1 TIMEOUT=150 \
  timeout 320 bash bench/train/run.sh) > "$OUT/train-console.txt" 2>&1
echo "train rc=$?"; grep -E "^SUMMARY|losses|ratio|equal" "$OUT/train-console.txt" | head -20
cd "$OUT" && tar czf logs.tgz logs hosttime2 hosttime4 train && rm -rf logs hosttime2 hosttime4 train
