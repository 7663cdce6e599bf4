#!/usr/bin/env bash
# One GPU session for issues 4 and 5 (bench/results/h200x2/run4, run5): the GPU tests, braid's PCIe
# path against NCCL's host path, the multipath benchmarks and the PyTorch DDP check. The device
# tool returns only a few files, so everything is packed into $OUT/results.tgz.
set -u
# $1: what gpu_run.sh runs (all, tests or bench).
here=$(cd "$(dirname "$0")" && pwd)
final=${OUT:-/tmp/out}
export OUT=$final/results
mkdir -p "$OUT"
cd "$here/.."
bash bench/gpu_run.sh "${1:-all}" 2>&1 | tee "$OUT/session.log" | grep -E "rc=|PASSED|FAILED|ceiling|^ +[0-9]{8,}" | cut -c1-200
bash bench/gpu_multipath.sh all 2>&1 | tee -a "$OUT/session.log" | grep -E "^ +[0-9]{6,}|phase|^ +[0-9] +o" | cut -c1-200
bash bench/ddp/run_ddp.sh --bucket-cap-mb 200 > "$OUT/ddp.log" 2>&1
grep -E "PASS|FAIL|rc " "$OUT/ddp.log" | head
tar czf "$final/results.tgz" -C "$final" results && rm -rf "$OUT"
ls -la "$final"
