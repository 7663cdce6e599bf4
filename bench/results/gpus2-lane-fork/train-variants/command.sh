#!/usr/bin/env bash
# A two-GPU machine, carry .rig gpubundle. Whether DDP with 256 MB buckets and FSDP2 got slower
# through braid with this session's changes or between earlier commits: bench/train/run.sh (plain,
# braid, plain, braid per case) once per build of libbraid.so, BRAID_LIB=
#   gpubundle/lib                  this session's tree (the progress thread times forks, ...)
#   .rig/alt/base      441d90f     the session's starting point
#   .rig/alt/prepull   5aca143     before AllGather pulled on a stream per peer (5fef2be, 729dc21)
# each built like gpubundle (Release; `ninja braid braid_cuda_gate`, stripped).
cd "$(dirname "$0")/../../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0
nvidia-smi -L > "$OUT/gpu.txt"
for v in new:gpubundle/lib base:.rig/alt/base prepull:.rig/alt/prepull; do
  name=${v%%:*}; dir=${v#*:}
  (OUT=$OUT/$name BRAID_LIB=$dir/libbraid.so CASES="${CASES:-ddp-comm-b256 fsdp}" REPS=${REPS:-2} TIMEOUT=100 \
    timeout 185 bash bench/train/run.sh) > "$OUT/train-$name.txt" 2>&1
  echo "== $name rc=$?"; grep -E "^SUMMARY" "$OUT/train-$name.txt" | sort -u
done
cd "$OUT" && tar czf train.tgz new base prepull train-*.txt && rm -rf new base prepull
