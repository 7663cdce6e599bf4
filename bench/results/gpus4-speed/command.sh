#!/usr/bin/env bash
# nvidia-h200-x4, carry .rig gpubundle. Issue 41 after the per-call making: (1) what the drop-in
# costs a PyTorch process at 2 ranks (braid's part is made at the first call a path takes, not at
# the first 64 MB all_reduce), with one INFO run each at 2 and 4; (2) nccl-tests speed, a process
# per GPU, plain and braid alternating in 2 pairs, on GPUs 0,1 and on all four (16M-1G, -c 1);
# (3) launch modes at 2 ranks through braid with -c 1: -t 2 -g 1, -g 2, -G 1 (MPI), and
# -d all -o all at 4 ranks, 64M and 256M.
cd "$(dirname "$0")/../../.." || exit 2
source bench/gpu_env.sh
mkdir -p "$OUT/logs"
CUDA_VISIBLE_DEVICES=0,1 timeout 150 python3 bench/process_cost.py --ranks 2 --braid gpubundle/lib/libbraid.so \
  --pairs 2 --timeout 70 --json "$OUT/cost-n2.json" --logs "$OUT/logs" > "$OUT/cost-n2.txt" 2>&1
echo "cost n=2 rc=$?"; tail -7 "$OUT/cost-n2.txt"
for n in 2 4; do
  CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((n - 1))) BRAID_DEBUG=INFO timeout 60 python3 bench/process_cost.py --ranks "$n" \
    --pairs 1 --calls 5 --mb 256 --braid gpubundle/lib/libbraid.so --logs "$OUT/logs/info" > /dev/null 2>&1
  echo "INFO n=$n:"; grep -h "multipath\|braid holds" "$OUT/logs/info/cost.n$n.braid.0.rank0.log" | cut -c1-300 | head -8
done
for n in 2 4; do
  CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((n - 1))) OUT=$OUT/speed$n RIG_PREFLIGHT=0 RIG_BUDGET=170 RIG_SPEED_PAIRS=2 \
    bash bench/rig/run.sh speed "$n" > "$OUT/speed$n-console.txt" 2>&1
  echo "speed n=$n rc=$?"; cat "$OUT/speed$n/speed_table.txt" 2>/dev/null | head -60
done
# Launch modes through braid (the rig's binaries, unpacked by run.sh into /tmp/rig).
export MPI_HOME=/tmp/rig/mpich PATH=/tmp/rig/mpich/bin:$PATH MPIR_CVAR_ENABLE_GPU=0
export LD_LIBRARY_PATH=$MPI_HOME/lib/mpich:$MPI_HOME/lib:$LD_LIBRARY_PATH
nt=/tmp/rig/nccl-tests-mpi; pre=(-genv LD_PRELOAD "$PWD/gpubundle/lib/libbraid.so")
modes() {
  local name=$1; shift
  timeout 90 "$@" > "$OUT/logs/mode-$name.log" 2>&1
  echo "mode $name rc=$? wrong=$(grep -E '^ +[0-9]+ ' "$OUT/logs/mode-$name.log" | awk '{w+=$(NF-4)+$NF} END {print w+0}') rows=$(grep -cE '^ +[0-9]+ ' "$OUT/logs/mode-$name.log")"
}
sz=(-b 1M -e 1G -f 8 -n 3 -w 1 -c 1 -T 40)
CUDA_VISIBLE_DEVICES=0,1 modes t2-all_gather mpiexec -n 1 "${pre[@]}" $nt/all_gather_perf "${sz[@]}" -t 2 -g 1
CUDA_VISIBLE_DEVICES=0,1 modes t2-all_reduce mpiexec -n 1 "${pre[@]}" $nt/all_reduce_perf "${sz[@]}" -t 2 -g 1
CUDA_VISIBLE_DEVICES=0,1 modes g2-all_gather mpiexec -n 1 "${pre[@]}" $nt/all_gather_perf "${sz[@]}" -g 2
CUDA_VISIBLE_DEVICES=0,1 modes mpi2-graph-all_gather mpiexec -n 2 "${pre[@]}" -genv BRAID_DEBUG INFO $nt/all_gather_perf "${sz[@]}" -G 1
CUDA_VISIBLE_DEVICES=0,1 modes mpi2-graph-all_reduce mpiexec -n 2 "${pre[@]}" $nt/all_reduce_perf "${sz[@]}" -G 1
for c in all_reduce reduce_scatter all_gather; do
  modes mpi4-dall-$c mpiexec -n 4 "${pre[@]}" $nt/${c}_perf -d all -o all -b 64M -e 256M -f 4 -n 1 -w 0 -c 1 -T 40
done
grep -c "captured in CUDA graphs ride" "$OUT/logs/mode-mpi2-graph-all_gather.log"
cd "$OUT" && tar czf logs.tgz logs speed2 speed4 && rm -rf logs speed2 speed4
