#!/usr/bin/env bash
# nvidia-h200 (one GPU; the one-GPU rig), carry .rig gpubundle; braid at b8155e5. The copy suite
# (the copy engines' two meetings and the wait before mapping, first time on a GPU), the routed
# exchange at 2 and 4 ranks on current main, and the DDP run with the meeting on the calling
# thread (caller, the default) and on the lane (BRAID_NVLINK_ON_LANE=1).
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:$LD_LIBRARY_PATH
(VARIANTS="caller lane" OUT=$OUT/ddp timeout 200 bash bench/results/h100x1-rig/lane-ddp-hang/command.sh) > "$OUT/ddp.txt" 2>&1
RIG_PREFLIGHT=0 RIG_BUDGET=330 RIG_ROUTE_COLLS="alltoall gather scatter alltoallv sendrecv hypercube" \
  bash bench/rig/run.sh copy 2 route 2 route 4 > "$OUT/rig.txt" 2>&1
