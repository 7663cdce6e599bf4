#!/usr/bin/env bash
# The join ring and the events made ahead (docs/MULTIPATH.md "One call"): the ring's own GPU test,
# then host time per call at 2 and 4 ranks (plain and braid alternating, 3 rounds), the 2-rank
# correctness matrix and a dying rank through the changed call path. Carry .rig and gpubundle.
set -u
cd "$(dirname "$0")/../../../.." 2>/dev/null || true
O=${OUT:-/tmp/out}; mkdir -p "$O"
LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-} timeout 120 gpubundle/multipath_join_ring_gpu_test > "$O/join_ring_gpu_test.txt" 2>&1
echo "join ring GPU test rc=$?"; tail -3 "$O/join_ring_gpu_test.txt"
OUT=$O/rig RIG_PREFLIGHT=0 RIG_BUDGET=${RIG_BUDGET:-500} bash bench/rig/run.sh hosttime 2 hosttime 4 correctness 2 dying 2 > "$O/rig-console.txt" 2>&1
echo "rig rc=$?"; grep -E "OVER|sizes over|logs,|FAIL|SKIPPED" "$O/rig-console.txt" | head -30
