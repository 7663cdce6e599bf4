#!/usr/bin/env bash
# One-GPU machine (the one-GPU rig), carry .rig gpubundle. NCCL's share of split calls queued by
# braid's progress thread on a communicator of its own (BRAID_NCCL_SHARE_ON_LANE=1, the default),
# with every split call really split (BRAID_BALANCER=static, BRAID_STATIC_SHARE=0.25; the faults
# suite sets its own half share): nccl-tests' own check (correctness 2: every type and operator;
# modes 2), faults 2, a dying rank at 2, then host time per call (host_time_probe, each call timed
# alone, plain and braid alternating, BRAID_CALLER_PROFILE=1), 4 ranks 1 round. The first call of each
# collective and size class on the new communicator is queued by the calling thread (warm-up).
cd "$(dirname "$0")/../../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > "$OUT/gpu.txt"; nproc >> "$OUT/gpu.txt"
export RIG_PREFLIGHT=0 BRAID_BALANCER=static BRAID_STATIC_SHARE=0.25
runs=("checks 420 correctness 2 modes 2 faults 2 dying 2"
      "hosttime 110 hosttime 4")
for spec in "${runs[@]}"; do
  read -r name budget suites <<< "$spec"
  echo "== $name"
  if [[ $name == hosttime ]]; then
    BRAID_DEBUG=INFO BRAID_DEBUG_SUBSYS=INIT BRAID_CALLER_PROFILE=1 RIG_HOSTTIME_TOOLS=probe RIG_HOSTTIME_ROUNDS=1 \
      OUT=$OUT/$name RIG_BUDGET=$budget bash bench/rig/run.sh $suites
  else
    OUT=$OUT/$name RIG_BUDGET=$budget bash bench/rig/run.sh $suites
  fi
done > "$OUT/rig-console.txt" 2>&1
echo "rig rc=$?"; grep -E "^== [a-z]|OVER|sizes over|logs,|^FAIL|SKIPPED|rounds\)|rc=[1-9]" "$OUT/rig-console.txt" | head -80
for spec in "${runs[@]}"; do
  read -r d _ <<< "$spec"
  [[ -d $OUT/$d ]] || continue
  tar -xzf "$OUT/$d/rig-logs.tar.gz" -O 2>/dev/null | grep -h "split calls handed\|NCCL's share of split calls" | sed "s/^/$d: /" >> "$OUT/profiles.txt"
  mv "$OUT/$d/rig-logs.tar.gz" "$OUT/$d-rig-logs.tar.gz"; { echo "== $d"; cat "$OUT/$d/summary.txt"; } >> "$OUT/summaries.txt"; rm -rf "${OUT:?}/$d"
done
python3 - "$OUT/profiles.txt" <<'PY'
import re, sys
for line in open(sys.argv[1]):
    m = re.search(r'rank (\d)/\d: (\d+) split calls handed on, caller us p50 ([\d.]+).*phases p50/mean/max us: (.*); wake', line)
    if m:
        print(line.split(':')[0], m.group(1), m.group(2), 'p50', m.group(3), ' '.join(f"{k}={v.split('/')[0]}" for k, v in re.findall(r'(\S+) ([\d./]+)', m.group(4))))
    elif "NCCL's share" in line:
        print(line.strip()[:200])
PY
