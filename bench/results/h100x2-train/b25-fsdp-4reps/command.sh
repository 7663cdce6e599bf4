#!/usr/bin/env bash
# nvidia-h100-x2, same warm machine and bundle: DDP at 25 MB buckets and FSDP2, 4 plain/braid pairs.
mkdir -p $OUT; (CASES="ddp-comm-b25 fsdp" REPS=4 TIMEOUT=100 timeout 300 bash bench/train/run.sh > $OUT/train-console.txt 2>&1; echo "train rc=$?" >> $OUT/train-console.txt); grep -E "SUMMARY|done|rc=" $OUT/train-console.txt | sort -u; cat $OUT/train/summary.md 2>/dev/null | grep "^|"; cd $OUT && tar czf train-logs.tar.gz train; rm -rf train
