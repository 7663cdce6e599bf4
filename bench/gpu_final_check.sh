#!/usr/bin/env bash
# Session 4's last GPU pass with the defaults (BRAID_NVLINK_PATH=auto: AllGather's NVLink share on
# the copy engines): the drop-in's correctness matrix, one thread driving both GPUs through groups,
# all_gather exactness through torchrun (CUDA IPC), the multipath collectives against NCCL alone,
# and DDP. Packed into $OUT/results-final.tgz. Usage on the device: bash bench/gpu_final_check.sh
set -u
source "$(dirname "$0")/gpu_env.sh"
final=$OUT
OUT=$final/results-final; mkdir -p "$OUT"
B=$G/braid-bench
summary() { grep -E "^\[  (FAILED|PASSED) |Failure" "$1" | sort | uniq -c | sort -rn | head -8; }
{
  BRAID_TIMEOUT=20 BRAID_DEBUG=WARN timeout 150 $G/shim_multipath_gpu_test > $OUT/shim_multipath.log 2>&1
  echo "shim multipath (defaults) rc=$?"; summary $OUT/shim_multipath.log
  BRAID_TIMEOUT=20 BRAID_DEBUG=WARN timeout 100 $G/shim_group_gpu_test > $OUT/shim_group.log 2>&1
  echo "shim group rc=$?"; summary $OUT/shim_group.log
  echo "## all_gather exactness through torchrun, LD_PRELOAD=libbraid.so"
  LD_PRELOAD=$PWD/$G/lib/libbraid.so BRAID_DEBUG=INFO BRAID_DEBUG_SUBSYS=INIT,BALANCE BRAID_DEBUG_FILE="$OUT/allgather.%p.log" \
    timeout 150 python3 -m torch.distributed.run --standalone --nproc_per_node=2 bench/ddp/peer_path_check.py \
    > $OUT/peer_path_check.log 2>&1
  echo "peer path check rc=$?"; grep -E "PASS|FAIL|rank [0-9]:" $OUT/peer_path_check.log | head -6
  grep -h "copy-engine" $OUT/allgather.*.log | head -2
  echo "$(cat $OUT/allgather.*.log | grep -c 'split allgather') split allgather lines in braid's logs"
  for c in all_gather all_reduce reduce_scatter; do
    echo "## $c with the defaults: multipath vs NCCL alone"
    timeout 100 $B --multipath -C $c -b 1K -e 1G -f 4 -n 20 -w 30 -J $OUT/mp_${c}.json | grep -E "^ +[0-9]"
  done
} > $OUT/final.log 2>&1
cut -c1-200 $OUT/final.log
bash bench/ddp/run_ddp.sh --bucket-cap-mb 200 > "$OUT/ddp.log" 2>&1; grep -E "PASS|FAIL|rc " "$OUT/ddp.log" | head
tar czf "$final/results-final.tgz" -C "$final" results-final && rm -rf "$OUT"
