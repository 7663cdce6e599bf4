#!/usr/bin/env bash
# A two-GPU machine, carry .rig gpubundle. Two questions left open on GPUs joined by NVLink:
#  1. BRAID_NVLINK_ON_LANE=1 (the copy engines' meeting on the progress thread), which hung FSDP2
#     before the drop-in asked for eager module loading: every training case, one pair each;
#  2. braid's progress-thread communicator with the application's config (train.py --nccl-config,
#     NCCL's INFO lines), FSDP2 with every split call split.
cd "$(dirname "$0")/../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0
nvidia-smi -L > "$OUT/gpu.txt"; nproc >> "$OUT/gpu.txt"
(OUT=$OUT/nvlink-on-lane BRAID_NVLINK_ON_LANE=1 BRAID_TIMEOUT=10 REPS=1 BRAID_DEBUG=INFO BRAID_DEBUG_SUBSYS=INIT \
   timeout 300 bash bench/train/run.sh) > "$OUT/nvlink-on-lane-console.txt" 2>&1
echo "nvlink-on-lane rc=$? at ${SECONDS}s"; grep -E "^SUMMARY" "$OUT/nvlink-on-lane-console.txt" | head -4
(OUT=$OUT/lane-config CASES=fsdp REPS=1 BRAID_BALANCER=static BRAID_STATIC_SHARE=0.25 BRAID_SPLIT_MIN_BYTES=1048576 \
   BRAID_TIMEOUT=10 BRAID_DEBUG=INFO BRAID_DEBUG_SUBSYS=INIT NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV \
   timeout 150 bash bench/train/run.sh --nccl-config max_ctas=16,min_ctas=2,cga_cluster_size=2) > "$OUT/lane-config-console.txt" 2>&1
echo "lane-config rc=$? at ${SECONDS}s"; grep -E "^SUMMARY" "$OUT/lane-config-console.txt" | head -2
grep -rh "Comm config\|queued by braid's progress thread" "$OUT/lane-config" "$OUT/lane-config-console.txt" \
  | sed 's/^.*\(NCCL INFO\|BRAID INFO\)/\1/' | sort | uniq -c | head -12
cd "$OUT" && tar czf logs.tgz nvlink-on-lane lane-config 2>/dev/null; rm -rf nvlink-on-lane lane-config
