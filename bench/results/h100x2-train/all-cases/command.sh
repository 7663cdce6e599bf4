#!/usr/bin/env bash
# nvidia-h100-x2, carrying .rig and gpubundle (braid at d51c306): every training case, one GPU per
# rank, plain NCCL and LD_PRELOAD=libbraid.so alternating, 2 pairs per case.
mkdir -p $OUT; (REPS=2 TIMEOUT=200 timeout 560 bash bench/train/run.sh > $OUT/train-console.txt 2>&1; echo "train rc=$?" >> $OUT/train-console.txt); tail -5 $OUT/train-console.txt; cat $OUT/train/summary.md 2>/dev/null | head -60; cd $OUT && tar czf train-logs.tar.gz train 2>/dev/null; rm -rf $OUT/train
