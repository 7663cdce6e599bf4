#!/usr/bin/env bash
# A two-GPU machine (nvidia-h100-x2; it may come as 2x H200), carry .rig gpubundle. (1) The rig's
# gpus suite (nccl-tests -c 1, 1 KB to 1 GiB, every launch mode, plain NCCL beside braid), with
# BRAID_SPLIT_GROUPS=auto now braid's default for -g 2 (the "braid-groups" rows are =1). (2) The
# training cases at full scale, a GPU per rank, on braid's default path with the CUDA gate. (3) DDP
# and FSDP2 with the copy engines' meeting on the progress thread (BRAID_NVLINK_ON_LANE=1), the
# configuration that deadlocked DDP on 2x H200 before the gate.
cd "$(dirname "$0")/../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > "$OUT/gpu.txt"; nvidia-smi topo -m > "$OUT/topo.txt" 2>&1
OUT=$OUT RIG_PREFLIGHT=0 RIG_BUDGET=150 timeout 200 bash bench/rig/run.sh gpus 2 > "$OUT/rig-console.txt" 2>&1
echo "rig rc=$?"; grep -E "logs,|FAIL" "$OUT/rig-console.txt" | head -5
grep -A14 ", g2:" "$OUT/busbw_table.txt" | grep -E "==|wrong|16777216|67108864|268435456|1073741824"
(OUT=$OUT/train REPS=1 timeout 200 bash bench/train/run.sh) > "$OUT/train-console.txt" 2>&1
echo "train rc=$?"; grep -E "SUMMARY" "$OUT/train-console.txt"
(export BRAID_NVLINK_ON_LANE=1 BRAID_TIMEOUT=15 BRAID_WATCH_STACKS=1 BRAID_DEBUG=INFO CASES="ddp-comm-b25 fsdp"
 OUT=$OUT/lane REPS=1 TIMEOUT=70 timeout 160 bash bench/train/run.sh) > "$OUT/lane-console.txt" 2>&1
echo "lane rc=$?"; grep -E "SUMMARY" "$OUT/lane-console.txt"
cd "$OUT" && tar czf logs.tgz train lane rig-console.txt train-console.txt lane-console.txt && rm -rf train lane
