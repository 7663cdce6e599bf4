#!/usr/bin/env bash
# One part of a GPU session for issues 4 and 5, packed into $OUT/results-<part>.tgz (the device
# tool returns only a few files). A whole pass is longer than one device call may run (600 s), so
# it is five calls:
#   bash bench/gpu_session.sh tests      # GPU tests (API, drop-in matrix, groups)
#   bash bench/gpu_session.sh bench      # braid's PCIe path against NCCL's host path (issue 4)
#   bash bench/gpu_session.sh multipath  # multipath against NCCL alone, the balancer (issue 5)
#   bash bench/gpu_session.sh variants   # settings not yet the default, against NCCL alone
#   bash bench/gpu_session.sh ddp        # unmodified PyTorch DDP with and without the drop-in
set -u
part=${1:?usage: gpu_session.sh tests|bench|multipath|variants|ddp}
here=$(cd "$(dirname "$0")" && pwd)
final=${OUT:-/tmp/out}
export OUT=$final/results-$part
mkdir -p "$OUT"
cd "$here/.."
case "$part" in
  tests|bench) bash bench/gpu_run.sh "$part" 2>&1 | tee "$OUT/session.log" | grep -E "rc=|PASSED|FAILED|ceiling|^ +[0-9]{8,}" | cut -c1-200 ;;
  multipath|variants) bash bench/gpu_multipath.sh "${part/multipath/all}" 2>&1 | tee "$OUT/session.log" | grep -E "^ +[0-9]{6,}|phase|^ +[0-9] +o|^##" | cut -c1-230 ;;
  ddp) bash bench/ddp/run_ddp.sh --bucket-cap-mb 200 > "$OUT/ddp.log" 2>&1; grep -E "PASS|FAIL|rc " "$OUT/ddp.log" | head ;;
  *) echo "unknown part: $part"; exit 2 ;;
esac
tar czf "$final/results-$part.tgz" -C "$final" "results-$part" && rm -rf "$OUT"
ls -la "$final"
