#!/usr/bin/env bash
# A two-GPU machine, carry .rig gpubundle. The library that asks for eager module loading, with
# NCCL's share of split calls on braid's progress thread (on by default, never run on GPUs joined
# by NVLink before):
#  1. the rig's gpus 2 suite (nccl-tests -c 1 in every launch mode: -t 2 -g 1, -p 1, a process per
#     GPU, -G, -d all -o all, alltoall, sendrecv, ...) to 256M with every split call split from 1 MB
#     (BRAID_BALANCER=static BRAID_STATIC_SHARE=0.25 BRAID_SPLIT_MIN_BYTES=1048576), so that NCCL's
#     share runs on the progress thread's communicator;
#  2. the training cases at default settings, one pair each;
#  3. FSDP2 with every split call split the same way (it failed so on the one-GPU rig under lazy
#     module loading).
cd "$(dirname "$0")/../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0
{ nvidia-smi -L; nproc; } > "$OUT/gpu.txt" 2>&1
forced=(BRAID_BALANCER=static BRAID_STATIC_SHARE=0.25 BRAID_SPLIT_MIN_BYTES=1048576)
(env "${forced[@]}" OUT=$OUT/rig RIG_PREFLIGHT=0 RIG_BUDGET=250 RIG_GPUS_MAX=256M bash bench/rig/run.sh gpus 2) > "$OUT/rig-console.txt" 2>&1
echo "== gpus rc=$? ($SECONDS s)"; grep -E "logs,|FAIL|CUT|SKIPPED" "$OUT/rig-console.txt" | head -12
tar -xzf "$OUT/rig/rig-logs.tar.gz" -O 2>/dev/null | grep -h "NCCL's share of split calls is queued" | sort | uniq -c | head -3
(OUT=$OUT/train REPS=1 TIMEOUT=90 BRAID_DEBUG=INFO BRAID_DEBUG_SUBSYS=INIT timeout $((530 - SECONDS - 80)) bash bench/train/run.sh) > "$OUT/train-console.txt" 2>&1
echo "== train rc=$? ($SECONDS s)"; grep -E "^SUMMARY|timed out" "$OUT/train-console.txt" | head -8
(env "${forced[@]}" BRAID_TIMEOUT=10 OUT=$OUT/fsdp-forced CASES=fsdp REPS=1 TIMEOUT=60 BRAID_DEBUG=INFO BRAID_DEBUG_SUBSYS=INIT \
   timeout $((580 - SECONDS)) bash bench/train/run.sh) > "$OUT/fsdp-forced-console.txt" 2>&1
echo "== fsdp-forced rc=$? ($SECONDS s)"; grep -E "^SUMMARY|timed out" "$OUT/fsdp-forced-console.txt" | head -3
grep -rh "PCIe share is off\|stopped responding\|queued by braid's progress" "$OUT/train" "$OUT/fsdp-forced" 2>/dev/null | sed 's/^[^ ]* //' | sort | uniq -c | head -6
cd "$OUT" && tar czf logs.tgz --exclude=logs.tgz rig train fsdp-forced 2>/dev/null; rm -rf rig train fsdp-forced
