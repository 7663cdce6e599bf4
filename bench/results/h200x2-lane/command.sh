# nvidia-h100-x2 (ran on 2x H200), carry .rig gpubundle; braid at 9448ab2, when the copy engines'
# meeting ran on the progress thread by default (now BRAID_NVLINK_ON_LANE=1).
mkdir -p $OUT; RIG_PREFLIGHT=0 RIG_BUDGET=180 RIG_HOSTTIME_ROUNDS=1 bash bench/rig/run.sh copy 2 > $OUT/rig.txt 2>&1
(CASES="ddp-comm-b25 fsdp" REPS=2 TIMEOUT=150 timeout 330 bash bench/train/run.sh > $OUT/train-console.txt 2>&1)
cd $OUT && tar czf train-logs.tar.gz train
