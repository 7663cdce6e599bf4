#!/usr/bin/env bash
# Session 5's GPU passes for braid's own NVLink AllReduce (src/peer, cuda/peer_reduce), in parts:
#   checks      the reduction kernel against the host reference (one GPU); the drop-in's correctness matrix with the defaults, with every AllReduce share
#               pulled through a small scratch, and with NCCL on every NVLink share; the group
#               test; all_gather and all_reduce exactness through torchrun (CUDA IPC); the three
#               collectives against NCCL alone (medians of 3); all_reduce with NCCL's NVLink share
#   acceptance  issue 5's lines: medians of 5 from 1 KB to 1 GiB (gpu_medians.sh), braid's PCIe
#               path alone for the physical limit, the balancer under PCIe bursts at 256 MB and
#               1 GiB, and the same at 256 MB with NCCL's NVLink share (session 3's setting)
#   variants    all_reduce's NVLink share read by the kernel (no copy engines) or pulled through
#               a smaller scratch, each with the balancer and alone (static share 0), against
#               NCCL alone; reduce_scatter with the defaults, with its NVLink share alone and with
#               BRAID_NVLINK_PATH=nccl (the same on a build where braid's path does not carry it); then the
#               balancer under PCIe bursts at 256 MB and 1 GiB
#   ddp         the DDP check (bench/ddp/run_ddp.sh)
# Each part is packed into $OUT/results-<part>.tgz. Usage on the device:
#   bash bench/gpu_peer_allreduce.sh checks|acceptance|variants|ddp
set -u
source "$(dirname "$0")/gpu_env.sh"
part=${1:?usage: gpu_peer_allreduce.sh checks|acceptance|variants|ddp}
final=$OUT
OUT=$final/results-$part; mkdir -p "$OUT"
B=$G/braid-bench
summary() { grep -E "^\[  (FAILED|PASSED) |Failure" "$1" | sort | uniq -c | sort -rn | head -8; }
matrix() {  # name, then settings
  local name=$1; shift
  env "$@" BRAID_TEST_PROGRESS=1 BRAID_TIMEOUT=20 BRAID_DEBUG=WARN timeout 150 $G/shim_multipath_gpu_test \
    > $OUT/shim_$name.log 2>&1
  echo "shim multipath ($name) rc=$?"; summary $OUT/shim_$name.log; tail -2 $OUT/shim_$name.log | cut -c1-160
}
pack() { tar czf "$final/results-$part.tgz" -C "$final" "results-$part" && rm -rf "$OUT"; }
if [ "$part" = ddp ]; then
  bash bench/ddp/run_ddp.sh --bucket-cap-mb 200 > "$OUT/ddp.log" 2>&1; grep -E "PASS|FAIL|rc " "$OUT/ddp.log" | head
  pack; exit 0
fi
phases() {  # size, then settings
  local size=$1; shift
  echo "## balancer under PCIe interference, all_reduce $size: hylink vs a static split tuned without it ($*)"
  env "$@" timeout 150 $B --multipath --paths braid -C all_reduce -b $size -e $size -w 30 --phases off:30,on:30,off:30 \
    --noise-bytes 256M -J $OUT/mp_phases_$size${1:+_${1%%=*}}.json
}
if [ "$part" = variants ]; then
  {
    for v in "" BRAID_NVLINK_PULL_MIN_BYTES=1000000000000 BRAID_NVLINK_SCRATCH_BYTES=16777216; do
      for share in "" "BRAID_BALANCER=static BRAID_STATIC_SHARE=0"; do
        echo "## all_reduce, ${v:-defaults} ${share:-(balancer)}: multipath vs NCCL alone, medians of 3"
        env $v $share timeout 100 $B --multipath -C all_reduce -b 64M -e 1G -f 4 -n 20 -w 30 --repeat 3 | grep -E "^ +[0-9]"
      done
    done
    for v in "" "BRAID_BALANCER=static BRAID_STATIC_SHARE=0" BRAID_NVLINK_PATH=nccl; do
      echo "## reduce_scatter, ${v:-defaults}: multipath vs NCCL alone, medians of 3"
      env $v timeout 100 $B --multipath -C reduce_scatter -b 16M -e 1G -f 4 -n 20 -w 30 --repeat 3 | grep -E "^ +[0-9]"
    done
    phases 256M
    phases 1G
    phases 256M BRAID_NVLINK_PULL_MIN_BYTES=1000000000000
  } > $OUT/variants.log 2>&1
  grep -E "^##|^ +[0-9]{8,}|static split tuned|^# phase|^ +[0-9] +o|bursts completed" $OUT/variants.log | cut -c1-200
  pack; exit 0
fi
if [ "$part" = acceptance ]; then
  OUT=$OUT bash bench/gpu_medians.sh > /dev/null 2>&1
  tar xzf $OUT/results-medians.tgz -C $OUT && rm $OUT/results-medians.tgz
  cut -c1-200 $OUT/results-medians/medians.log
  {
    echo "## the physical limit: braid's PCIe path alone at 256 MB and 1 GiB"
    for c in all_reduce all_gather reduce_scatter; do
      timeout 100 $B --paths braid -C $c -b 256M -e 1G -f 4 -n 10 -w 3 -J $OUT/pcie_alone_$c.json | grep -E "^ +[0-9]"
    done
    phases 256M
    phases 1G
    phases 256M BRAID_NVLINK_PATH=nccl
  } > $OUT/acceptance.log 2>&1
  grep -E "^##|^ +[0-9]{8,}|static split tuned|^# phase|^ +[0-9] +o|bursts completed" $OUT/acceptance.log | cut -c1-200
  pack; exit 0
fi
{
  timeout 200 $G/cuda_peer_reduce_gpu_test > $OUT/peer_reduce_kernel.log 2>&1
  echo "peer reduce kernel (one GPU) rc=$?"; summary $OUT/peer_reduce_kernel.log
  matrix defaults
  matrix pull BRAID_NVLINK_PULL_MIN_BYTES=1 BRAID_NVLINK_SCRATCH_BYTES=65536
  matrix nccl BRAID_NVLINK_PATH=nccl
  BRAID_TIMEOUT=20 BRAID_DEBUG=WARN timeout 100 $G/shim_group_gpu_test > $OUT/shim_group.log 2>&1
  echo "shim group rc=$?"; summary $OUT/shim_group.log
  echo "## all_gather and all_reduce exactness through torchrun, LD_PRELOAD=libbraid.so"
  LD_PRELOAD=$PWD/$G/lib/libbraid.so BRAID_DEBUG=INFO BRAID_DEBUG_SUBSYS=INIT,BALANCE BRAID_DEBUG_FILE="$OUT/peer.%p.log" \
    timeout 200 python3 -m torch.distributed.run --standalone --nproc_per_node=2 bench/ddp/peer_path_check.py \
    > $OUT/peer_path_check.log 2>&1
  echo "peer path check rc=$?"; grep -E "PASS|FAIL|rank [0-9]:" $OUT/peer_path_check.log | head -6
  grep -h "own path\|copy-engine" $OUT/peer.*.log | head -3 | cut -c1-200
  echo "$(cat $OUT/peer.*.log | grep -c 'split allreduce') split allreduce lines in braid's logs"
  for c in all_reduce all_gather reduce_scatter; do
    echo "## $c with the defaults: multipath vs NCCL alone, medians of 3"
    timeout 120 $B --multipath -C $c -b 1K -e 1G -f 4 -n 20 -w 30 --repeat 3 -J $OUT/mp_${c}.json | grep -E "^ +[0-9]"
  done
  echo "## all_reduce with NCCL carrying the NVLink share (BRAID_NVLINK_PATH=nccl), medians of 3"
  BRAID_NVLINK_PATH=nccl timeout 100 $B --multipath -C all_reduce -b 64M -e 1G -f 4 -n 20 -w 30 --repeat 3 \
    -J $OUT/mp_all_reduce_nccl.json | grep -E "^ +[0-9]"
} > $OUT/peer.log 2>&1
cut -c1-200 $OUT/peer.log
pack
