#!/usr/bin/env bash
# nvidia-h100-x1, carry .rig gpubundle: DDP (25 MB buckets) through braid on the one-GPU rig with
# braid's copy-engine NVLink path (BRAID_NVLINK_PATH=copy, BRAID_PEER_SAME_GPU=1), to see where the
# 2x H200 training run hung. VARIANTS (default "lane sync"): lane, the share's meeting on the
# progress thread (BRAID_NVLINK_ON_LANE=1; the default when before/ was taken); sync, BRAID_ASYNC=0;
# caller, today's default (the meeting on the calling thread). While a run is stuck after 50 s:
# each rank's threads (name, kernel wait channel) and, where gdb exists, their stacks.
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export BRAID_NVLINK_PATH=copy BRAID_PEER_SAME_GPU=1 BRAID_NVLINK_COPY_MIN_BYTES=1048576 BRAID_NVLINK_ALLREDUCE_MIN_BYTES=1048576 BRAID_DEBUG=TRACE BRAID_DEBUG_SUBSYS=BALANCE,INIT,ALLOC
for variant in ${VARIANTS:-lane sync}; do
  unset BRAID_ASYNC BRAID_NVLINK_ON_LANE
  [ $variant = sync ] && export BRAID_ASYNC=0
  [ $variant = lane ] && export BRAID_NVLINK_ON_LANE=1
  mkdir -p "$OUT/$variant"
  (OUT=$OUT/$variant CASES=ddp-comm-b25 REPS=1 SCALE=full TIMEOUT=75 STEPS=6 WARMUP=1 WRAPPER=bench/rig/one-gpu-rank.sh RANKS=2 \
    bash bench/train/run.sh > "$OUT/$variant/console.txt" 2>&1) &
  runner=$!
  for _ in $(seq 50); do sleep 1; kill -0 $runner 2>/dev/null || break; done
  for pid in $(pgrep -f "train.py" | head -4); do
    {
      echo "== pid $pid: $(tr '\0' ' ' < /proc/$pid/cmdline | cut -c1-200)"
      for t in /proc/$pid/task/*; do echo "$(cat $t/comm) $(cat $t/wchan)"; done
      command -v gdb >/dev/null && timeout 30 gdb -batch -p "$pid" -ex "thread apply all bt 12" 2>&1 | grep -E "^#|^Thread" | head -150
    } > "$OUT/$variant/stacks.$pid.txt" 2>&1
  done
  wait $runner
  tail -5 "$OUT/$variant/console.txt"
done
cd "$OUT" && tar czf diag.tgz ${VARIANTS:-lane sync} && rm -rf ${VARIANTS:-lane sync}
