#!/usr/bin/env bash
# nvidia-h100-x2 (the one-GPU rig on its GPU 0: two processes as two hosts), braid at d51c306:
# a failure injected at each step (faults 2), and host time per call (hosttime 2).
O=$OUT; OUT=$O RIG_PREFLIGHT=0 RIG_BUDGET=420 bash bench/rig/run.sh faults 2 hosttime 2 > $O/rig-console.txt 2>&1; echo "rig rc=$?"; grep -E "^== |rc=(1[0-9][0-9]|[1-9]) |SKIPPED|logs,|FAIL|OVER|over" $O/rig-console.txt | head -40
