#!/usr/bin/env bash
# One-GPU machine (the one-GPU rig), carry .rig gpubundle. NCCL's share of split calls on braid's
# progress thread (BRAID_NCCL_SHARE_ON_LANE=1, the default), every split call really split
# (BRAID_BALANCER=static, BRAID_STATIC_SHARE=0.25): a dying rank at 2 and 4 ranks (the survivors
# must see the error and return from ncclCommAbort within the bound; braid now aborts its own NCCL
# communicator first), faults 4, then the training cases (bench/train/run.sh: DDP 25 and 256 MB
# buckets, FSDP2, compute-bound DDP), plain NCCL and braid, losses compared step by step.
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > "$OUT/gpu.txt"; nproc >> "$OUT/gpu.txt"
export RIG_PREFLIGHT=0 BRAID_BALANCER=static BRAID_STATIC_SHARE=0.25
OUT=$OUT/checks RIG_BUDGET=150 bash bench/rig/run.sh dying 2 dying 4 faults 4 > "$OUT/rig-console.txt" 2>&1
echo "rig rc=$?"; grep -E "^== [a-z]|logs,|^FAIL|SKIPPED|rc=[1-9]" "$OUT/rig-console.txt" | head -30
mv "$OUT/checks/rig-logs.tar.gz" "$OUT/checks-rig-logs.tar.gz"; cp "$OUT/checks/summary.txt" "$OUT/summaries.txt"; rm -rf "$OUT/checks"
(OUT=$OUT/train WRAPPER=bench/rig/one-gpu-rank.sh RANKS=2 REPS=1 BRAID_DEBUG=INFO BRAID_DEBUG_SUBSYS=INIT timeout 330 bash bench/train/run.sh) > "$OUT/train-console.txt" 2>&1
echo "train rc=$?"; grep -E "^run |SUMMARY|done in|equal|differ" "$OUT/train-console.txt" | head -30
grep -rh "NCCL's share of split calls" "$OUT/train" 2>/dev/null | head -4
cd "$OUT" && tar czf train-logs.tgz train && rm -rf train
