#!/usr/bin/env bash
# One-GPU machine (the one-GPU rig), carry .rig gpubundle; braid with the CUDA gate, split groups
# by default and AllReduce's NVLink threshold. At 2 ranks: host time per call against plain NCCL
# (3 alternating rounds, all_reduce_perf -C 1, 4 KB-256 MB), nccl-tests' launch modes with -c 1,
# then every training case on braid's default path, losses compared step by step.
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > "$OUT/gpu.txt"
OUT=$OUT RIG_PREFLIGHT=0 RIG_BUDGET=290 bash bench/rig/run.sh hosttime 2 modes 2 > "$OUT/rig-console.txt" 2>&1
echo "rig rc=$?"; grep -E "OVER|sizes over|within|logs,|FAIL|SKIPPED|rounds\)|^==" "$OUT/rig-console.txt" | head -40
(OUT=$OUT/train WRAPPER=bench/rig/one-gpu-rank.sh RANKS=2 REPS=1 TIMEOUT=60 timeout 200 bash bench/train/run.sh) > "$OUT/train-console.txt" 2>&1
echo "train rc=$?"; grep -E "SUMMARY" "$OUT/train-console.txt" | sort -u
cd "$OUT" && tar czf train.tgz train && rm -rf train
# Then, on the same warm machine, host time again (rig-console-rerun.txt, rig-logs-rerun.tar.gz):
#   OUT=$OUT RIG_PREFLIGHT=0 RIG_BUDGET=150 bash bench/rig/run.sh hosttime 2
