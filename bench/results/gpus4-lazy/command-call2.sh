cd /work/main 2>/dev/null || true
source bench/gpu_env.sh
mkdir -p "$OUT/logs"
CUDA_VISIBLE_DEVICES=0,1,2,3 BRAID_DEBUG=INFO timeout 60 python3 bench/process_cost.py --ranks 4 --pairs 1 --calls 5 --mb 256 --braid gpubundle/lib/libbraid.so --logs "$OUT/logs/info" > /dev/null 2>&1
echo "INFO n=4:"; grep -h "multipath\|braid holds" "$OUT/logs/info/cost.n4.braid.0.rank0.log" | cut -c1-400 | head -8
(CUDA_VISIBLE_DEVICES=0,1 RANKS=2 OUT=$OUT/train CASES="ddp-comm-b25 ddp-comm-b256 fsdp fsdp-compiled" REPS=1 TIMEOUT=150 timeout 420 bash bench/train/run.sh) > "$OUT/train-console.txt" 2>&1
echo "train rc=$?"; grep -E "^\|" "$OUT/train/train/summary.md" 2>/dev/null | head -10; grep -E "^SUMMARY" "$OUT/train-console.txt" | head
cd "$OUT" && tar czf logs.tgz logs train && rm -rf logs train
