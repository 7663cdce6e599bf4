#!/usr/bin/env bash
# One-GPU machine (the one-GPU rig), carry .rig gpubundle. FSDP2 (bench/train/run.sh CASES=fsdp)
# with every split call split (BRAID_BALANCER=static, BRAID_STATIC_SHARE=0.25), NCCL's share on the
# calling thread (BRAID_NCCL_SHARE_ON_LANE=0) and then on braid's progress thread (1): is the
# failure seen in ../nccl-on-lane-abort-train/ the new path's, or the static split's?
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
export BRAID_BALANCER=static BRAID_STATIC_SHARE=0.25 BRAID_TIMEOUT=10
for lane in 0 1; do
  (BRAID_NCCL_SHARE_ON_LANE=$lane OUT=$OUT/lane$lane CASES=fsdp WRAPPER=bench/rig/one-gpu-rank.sh RANKS=2 REPS=1 \
     BRAID_DEBUG=INFO BRAID_DEBUG_SUBSYS=INIT timeout 100 bash bench/train/run.sh) > "$OUT/lane$lane-console.txt" 2>&1
  echo "lane $lane rc=$?"; grep -E "^run |SUMMARY" "$OUT/lane$lane-console.txt" | head -4
done
cd "$OUT" && tar czf logs.tgz lane0 lane1 && rm -rf lane0 lane1
