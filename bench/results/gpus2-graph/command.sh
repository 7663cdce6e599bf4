#!/usr/bin/env bash
# A two-GPU machine (nvidia-h200-x2 or nvidia-h100-x2), carry .rig gpubundle. (1) The GPU test of
# calls captured in CUDA graphs (AllGather 32 MiB and AllReduce 160 MiB per rank, replayed with new
# inputs, calls outside the graph between replays). (2) The rig's graph suite with a GPU per rank:
# nccl-tests -G on braid's NVLink path with -c 1, then -G 5 all_gather and all_reduce, 1 MB-1 GiB,
# default settings, plain and braid. (3) DDP on braid's default path (AllReduce's NVLink threshold
# at 128 MiB), 25 and 256 MB buckets, two plain/braid pairs each.
cd "$(dirname "$0")/../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > "$OUT/gpu.txt"
NCCL_NVLS_ENABLE=0 timeout 100 gpubundle/shim_multipath_gpu_test --gtest_filter='*Captured*' > "$OUT/captured-test.txt" 2>&1
echo "captured test rc=$?"; tail -3 "$OUT/captured-test.txt"
OUT=$OUT RIG_PREFLIGHT=0 RIG_BUDGET=180 timeout 215 bash bench/rig/run.sh graph 2 > "$OUT/rig-console.txt" 2>&1
echo "rig rc=$?"; grep -E "logs,|FAIL|graph 2" "$OUT/rig-console.txt" | head -8
grep -A9 "default-n2" "$OUT/rig-console.txt" | head -24
(OUT=$OUT/train CASES="ddp-comm-b25 ddp-comm-b256" REPS=2 timeout 240 bash bench/train/run.sh) > "$OUT/train-console.txt" 2>&1
echo "train rc=$?"; grep -E "SUMMARY" "$OUT/train-console.txt"
cd "$OUT" && tar czf train.tgz train train-console.txt && rm -rf train
