#!/usr/bin/env bash
# Pipelining of the PCIe share (session 4): the multipath collectives at 128 MB - 1 GiB with more
# chunks per block, smaller slices and fewer reduction blocks than the defaults, each against NCCL
# alone in the same run; and the PCIe path alone at the sizes its shares have (8-128 MB), where
# its fixed time per call shows. Log and JSON packed into $OUT/results-sweep.tgz.
# Usage on the device: bash bench/gpu_tuning_sweep.sh
set -u
source "$(dirname "$0")/gpu_env.sh"
final=$OUT
OUT=$final/results-sweep; mkdir -p "$OUT"
B=$G/braid-bench
mp() {  # mp <label> <collective> [VAR=value ...]
  local label=$1 c=$2; shift 2
  echo "## $c $label: multipath vs NCCL alone"
  env "$@" timeout 60 $B --multipath -C "$c" -b 128M -e 1G -f 2 -n 20 -w 30 -J "$OUT/mp_${c}_${label}.json" | grep -E "^ +[0-9]"
}
{
for c in all_reduce all_gather; do
  mp default $c BRAID_DEBUG=
  mp chunks8 $c BRAID_CHUNKS=8
  mp chunks16 $c BRAID_CHUNKS=16
  mp slice4M $c BRAID_SLICE_BYTES=4194304
  mp slice2M $c BRAID_SLICE_BYTES=2097152
  mp chunks8_slice4M $c BRAID_CHUNKS=8 BRAID_SLICE_BYTES=4194304
done
mp blocks64 all_reduce BRAID_REDUCE_BLOCKS=64
mp blocks128 all_reduce BRAID_REDUCE_BLOCKS=128
mp chunks8 reduce_scatter BRAID_CHUNKS=8
mp default reduce_scatter BRAID_DEBUG=
for ch in 4 8 16; do
  for c in all_reduce all_gather; do
    echo "## PCIe path alone, $c, chunks=$ch"
    BRAID_CHUNKS=$ch timeout 60 $B --paths braid -C $c -b 8M -e 128M -f 2 -n 20 -w 5 | grep -E "^ +[0-9]"
  done
done
} > $OUT/sweep.log 2>&1
cut -c1-200 $OUT/sweep.log
tar czf "$final/results-sweep.tgz" -C "$final" results-sweep && rm -rf "$OUT"
