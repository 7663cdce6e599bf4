#!/usr/bin/env bash
# A two-GPU machine, carry .rig gpubundle (.rig/alt/fork/libbraid.so: an out-of-place AllGather's
# own block copied by cudaMemcpyAsync on a forked stream; gpubundle: by braid's kernel,
# cuda::copy_on_sms). (1) the kernel's GPU test; (2) per library, host time per all_gather call
# (host_time_probe, 3 rounds, plain NCCL beside it) and nccl-tests -c 1 with braid's NVLink path
# forced, 16M to 256M; (3) the new library in every launch mode (gpus suite to 256M, -c 1).
cd "$(dirname "$0")/../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0
{ nvidia-smi -L; nproc; } > "$OUT/gpu.txt" 2>&1
gpubundle/cuda_peer_reduce_gpu_test > "$OUT/peer_reduce_gpu_test.txt" 2>&1
echo "== peer_reduce_gpu_test rc=$? ($SECONDS s)"; tail -3 "$OUT/peer_reduce_gpu_test.txt"
for lib in fork kernel; do
  so=$PWD/gpubundle/lib/libbraid.so; [[ $lib == fork ]] && so=$PWD/.rig/alt/fork/libbraid.so
  RIG_BRAID_SO=$so OUT=$OUT/hosttime-$lib RIG_PREFLIGHT=0 RIG_BUDGET=100 RIG_HOSTTIME_PER_GPU=1 RIG_HOSTTIME_TOOLS=probe \
    RIG_HOSTTIME_COLLS=all_gather RIG_HOSTTIME_ROUNDS=3 \
    bash bench/rig/run.sh hosttime 2 > "$OUT/hosttime-$lib-console.txt" 2>&1
  echo "== hosttime $lib rc=$? ($SECONDS s)"; grep -E "OVER|sizes over" "$OUT/hosttime-$lib-console.txt"
  RIG_BRAID_SO=$so OUT=$OUT/nvlink-$lib RIG_PREFLIGHT=0 RIG_BUDGET=120 RIG_NVLINK_SIZES="-b 16M -e 256M -f 4" \
    bash bench/rig/run.sh nvlink 2 > "$OUT/nvlink-$lib-console.txt" 2>&1
  echo "== nvlink $lib rc=$? ($SECONDS s)"; grep -E "logs,|FAIL|CUT" "$OUT/nvlink-$lib-console.txt" | head -8
done
OUT=$OUT/rig RIG_PREFLIGHT=0 RIG_BUDGET=$((400 - SECONDS)) RIG_GPUS_MAX=256M bash bench/rig/run.sh gpus 2 > "$OUT/rig-console.txt" 2>&1
echo "== gpus rc=$? ($SECONDS s)"; grep -E "logs,|FAIL|CUT" "$OUT/rig-console.txt" | head -8
cd "$OUT" && tar czf logs.tgz --exclude=logs.tgz $(ls -d */) && rm -rf $(ls -d */)
