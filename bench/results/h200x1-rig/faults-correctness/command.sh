#!/usr/bin/env bash
# One-GPU machine (the one-GPU rig), carry .rig gpubundle: on current main, a failure injected at
# each setup and run step (2 and 4 ranks), a dying rank (2 and 4), nccl-tests -d all -o all
# (correctness 2); and whether this machine offers RDMA (soft-RoCE) for an ibverbs transport.
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
nvidia-smi -L > "$OUT/gpu.txt"
{ echo "## RDMA probe"; uname -r; ls /sys/class/infiniband 2>&1; ls /lib/modules 2>&1 | head -3
  grep -E "rxe|rdma|ib_" /proc/modules 2>&1 | head; command -v rdma modprobe ibv_devices 2>&1
  ls /dev/infiniband 2>&1; id -u; } > "$OUT/rdma-probe.txt" 2>&1
cat "$OUT/rdma-probe.txt"
OUT=$OUT RIG_PREFLIGHT=0 RIG_BUDGET=420 bash bench/rig/run.sh faults 2 faults 4 dying 2 dying 4 correctness 2 > "$OUT/rig-console.txt" 2>&1
echo "rig rc=$?"; grep -E "logs,|FAIL|SKIPPED|^==" "$OUT/rig-console.txt" | head -20
