#!/usr/bin/env bash
# nvidia-h200-x4, carry gpubundle. Issue 41: what the drop-in costs a PyTorch process (GPU memory at
# the first all_reduce and after the first kernels, start-up, peak RSS) and a seeded, checked
# sequence of 1000 mixed collectives over three process groups, plain and through braid
# alternating, 2 pairs each, on 4 GPUs and on GPUs 0,1; the application's module loading left as
# CUDA's default (lazy).
cd "$(dirname "$0")/../../.." || exit 2
source bench/gpu_env.sh
{ nvidia-smi -L; nproc; python3 -c 'import torch; print(torch.__version__, torch.cuda.nccl.version())'; } > "$OUT/gpu.txt" 2>&1
mkdir -p "$OUT/logs"
for n in 4 2; do
  vis=$(seq -s, 0 $((n - 1)))
  CUDA_VISIBLE_DEVICES=$vis timeout 170 python3 bench/process_cost.py --ranks "$n" --braid gpubundle/lib/libbraid.so \
    --pairs 2 --timeout 80 --json "$OUT/cost-n$n.json" --logs "$OUT/logs" > "$OUT/cost-n$n.txt" 2>&1
  echo "cost n=$n rc=$?"; tail -8 "$OUT/cost-n$n.txt"
  CUDA_VISIBLE_DEVICES=$vis timeout 200 python3 bench/mixed_collectives.py --ranks "$n" --calls 1000 \
    --braid gpubundle/lib/libbraid.so --pairs 2 --timeout 90 --json "$OUT/mixed-n$n.json" --logs "$OUT/logs" \
    > "$OUT/mixed-n$n.txt" 2>&1
  echo "mixed n=$n rc=$?"; tail -5 "$OUT/mixed-n$n.txt"
done
# One preloaded run's INFO lines: what braid made per communicator and why.
CUDA_VISIBLE_DEVICES=0,1 BRAID_DEBUG=INFO timeout 60 python3 bench/process_cost.py --ranks 2 --pairs 1 --calls 5 \
  --braid gpubundle/lib/libbraid.so --logs "$OUT/logs-info" > "$OUT/info-n2.txt" 2>&1
CUDA_VISIBLE_DEVICES=0,1,2,3 BRAID_DEBUG=INFO timeout 60 python3 bench/process_cost.py --ranks 4 --pairs 1 --calls 5 \
  --braid gpubundle/lib/libbraid.so --logs "$OUT/logs-info" > "$OUT/info-n4.txt" 2>&1
grep -h "multipath\|braid holds\|holds" "$OUT"/logs-info/*braid*rank0.log | head -10
cd "$OUT" && tar czf logs.tgz logs logs-info && rm -rf logs logs-info
