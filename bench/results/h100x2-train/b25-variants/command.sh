#!/usr/bin/env bash
# nvidia-h100-x2, same warm machine and bundle as ../all-cases: DDP at 25 MB buckets, braid with
# BRAID_DEBUG=INFO (what braid decides), with BRAID_SPLIT_MIN_BYTES=1T (braid splits nothing) and
# with BRAID_DISABLE=1 (a pure pass-through): how far apart two plain/braid pairs land by chance.
mkdir -p $OUT; for v in "info BRAID_DEBUG=INFO" "nosplit BRAID_SPLIT_MIN_BYTES=1T" "disable BRAID_DISABLE=1"; do set -- $v; (export $2; OUT=$OUT/$1 CASES=ddp-comm-b25 REPS=2 TIMEOUT=100 timeout 150 bash bench/train/run.sh > $OUT/$1.console.txt 2>&1); grep SUMMARY $OUT/$1.console.txt; done; cd $OUT && tar czf diag.tar.gz info nosplit disable *.console.txt; rm -rf info nosplit disable
