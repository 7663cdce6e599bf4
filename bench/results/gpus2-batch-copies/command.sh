#!/usr/bin/env bash
# A two-GPU machine, carry .rig gpubundle (.rig/alt/fork: an out-of-place AllGather's own-block copy
# on a forked stream; .rig/alt/batch: the peer's block and the own one in one cudaMemcpyBatchAsync
# on the caller's stream, no fork or join). Per library: host time per all_gather call
# (host_time_probe, 3 rounds, plain NCCL beside it), then nccl-tests -c 1 with braid's NVLink path
# forced, 16M to 256M (busbw against plain NCCL in the same suite).
cd "$(dirname "$0")/../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0
{ nvidia-smi -L; nproc; } > "$OUT/gpu.txt" 2>&1
for lib in fork batch; do
  so=$PWD/.rig/alt/$lib/libbraid.so
  RIG_BRAID_SO=$so OUT=$OUT/hosttime-$lib RIG_PREFLIGHT=0 RIG_BUDGET=100 RIG_HOSTTIME_PER_GPU=1 RIG_HOSTTIME_TOOLS=probe \
    RIG_HOSTTIME_COLLS=all_gather RIG_HOSTTIME_ROUNDS=3 \
    bash bench/rig/run.sh hosttime 2 > "$OUT/hosttime-$lib-console.txt" 2>&1
  echo "== hosttime $lib rc=$? ($SECONDS s)"; grep -E "OVER|sizes over" "$OUT/hosttime-$lib-console.txt"
  RIG_BRAID_SO=$so OUT=$OUT/nvlink-$lib RIG_PREFLIGHT=0 RIG_BUDGET=120 RIG_NVLINK_SIZES="-b 16M -e 256M -f 4" \
    bash bench/rig/run.sh nvlink 2 > "$OUT/nvlink-$lib-console.txt" 2>&1
  echo "== nvlink $lib rc=$? ($SECONDS s)"; grep -E "logs,|FAIL|CUT" "$OUT/nvlink-$lib-console.txt" | head -8
done
cd "$OUT" && tar czf logs.tgz --exclude=logs.tgz $(ls -d */) && rm -rf $(ls -d */)
