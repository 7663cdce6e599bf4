#!/usr/bin/env bash
# The one GPU check: every GPU test, the main job (braid bench), the nccl-tests matrix of the
# one-GPU rig (bench/rig/run.sh) and the PyTorch benchmarks (bench/train/run.sh, bench/moe/run.sh),
# into one dated folder with a summary. Run on the GPU machine from the repository root:
#
#   bash bench/gpu_check.sh                 # every part that applies to this machine, in order
#   bash bench/gpu_check.sh tests main      # some parts: tests main phases rig train moe
#
# What it needs: gpubundle/ (bench/make_gpubundle.sh; built here when missing and nvcc and braid's
# build dependencies are present, as on a developer's GPU machine) and, for the rig, .rig/
# (bench/rig/prepare.sh, run on the CPU machine): the device tool carries both as ignored paths.
# PyTorch for the training part and braid's torchrun checks (skipped without it).
#
# Parts:
#   tests  braid doctor (the PCIe ceiling measured); the GPU test binaries of the bundle (the API, the drop-in's correctness matrix with the
#          defaults, with NCCL on every NVLink share and with the copy-based NCCL share, groups, the
#          peer reduction kernel, braid's NVLink path between two processes on one GPU, the argument fuzz); with PyTorch, its collectives exact through
#          the drop-in (bench/checks/torch_collectives.py, blocking and non-blocking communicators;
#          one GPU: on the rig's wrapper) and its split trace plotted (split.png), a mixed sequence of
#          300 collectives over three process groups (bench/mixed_collectives.py); with 2+ GPUs and PyTorch, all_gather and
#          all_reduce through torchrun with the drop-in (CUDA IPC), cached and uncached allocator
#   main   with 2+ GPUs: `braid bench` (braid against NCCL alone, JSON and a PNG; --quick when the
#          budget is short); `braid bench --check` against GPU_CHECK_BASELINE when it is set.
#          With one GPU: skipped (multipath needs 2 GPUs; the rig covers the drop-in there)
#   phases with 2+ GPUs: the balancer under PCIe bursts (braid-bench --phases), adapting and static
#   rig    nccl-tests through the drop-in on the one-GPU rig: correctness 2 and hosttime 2
#          (RIG_SUITES overrides), within what is left of the budget
#   train  bench/train/run.sh, plain and preloaded, losses compared (one GPU: the rig's wrapper)
#   moe    bench/moe/run.sh, MoE dispatch/combine plain and preloaded, every token checked (the same)
#
# GPU_CHECK_BUNDLE names another bundle folder than gpubundle/ (python/tests/test_gpu_check.py
# runs this script on stubs that way).
# Time: GPU_CHECK_BUDGET seconds in all (default 560, inside one 10-minute device call). A part
# that no longer fits is not started; the summary names it and the command that runs the parts
# left in the next call. Each command is bounded by `timeout`.
# Output: $OUT/gpu-check-DATE-TIME/ (OUT default /tmp/out): summary.md (also printed), the main
# job's results.json and algbw.png, split.jsonl and split.png, and logs.tar.gz with every log. Exit status: 0 when every part
# run passed, 1 otherwise (parts not run do not count).
set -u
cd "$(dirname "$0")/.."
source bench/gpu_env.sh
root=$PWD
budget=${GPU_CHECK_BUDGET:-560}
start=$(date +%s)
dir=$OUT/gpu-check-$(date -u +%Y%m%d-%H%M%S)
logs=$dir/logs
mkdir -p "$logs"
summary=$dir/summary.md
failed=0
left=()

gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
have_torch=0
python3 -c "import torch" 2>/dev/null && have_torch=1
{
  echo "# braid GPU check, $(date -u '+%Y-%m-%d %H:%M:%S') UTC"
  echo
  echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown); $gpus GPUs:"
  nvidia-smi -L 2>/dev/null | sed 's/^/    /'
  echo "PyTorch: $([ $have_torch = 1 ] && python3 -c 'import torch; print(torch.__version__)' || echo none)"
  echo
} > "$summary"

say() { echo "$*" >> "$summary"; }
remaining() { echo $((budget - ($(date +%s) - start))); }
# until_end MARGIN: a part's time limit, what is left of the budget less MARGIN (at least 30 s).
until_end() { local t=$(( $(remaining) - $1 )); echo $(( t < 30 ? 30 : t )); }
# fits SECONDS: whether a part needing that long still fits in the budget.
fits() { [ "$(remaining)" -ge "$1" ]; }
# check NAME SECONDS CMD...: runs one bounded command, logs it, records its verdict.
# A command that would outlast the budget is cut to it; one with under 20 s left is not started,
# and its part is named among those to run in the next call.
check() {
  local name=$1 limit=$2; shift 2
  local log=$logs/$name.log rc cap=$(( $(remaining) - 5 ))
  if [ $cap -lt 20 ]; then
    say "- not run (budget): $name"
    [[ " ${left[*]} " == *" $part "* ]] || left+=("$part")
    return
  fi
  [ "$limit" -gt $cap ] && limit=$cap
  echo "+ $*" > "$log"
  timeout "$limit" "$@" >> "$log" 2>&1
  rc=$?
  echo "rc=$rc" >> "$log"
  local gtest
  gtest=$(grep -E "^\[  (PASSED|FAILED|SKIPPED)  \]" "$log" | tr '\n' ' ' | cut -c1-160)
  # A gtest binary whose every test skipped (too few GPUs here) showed nothing: said so, not PASS.
  if [ $rc -eq 0 ] && grep -qE "^\[  PASSED  \] 0 tests" "$log"; then say "- SKIPPED $name ${gtest}"
  elif [ $rc -eq 0 ]; then say "- PASS $name ${gtest}"; else say "- **FAIL** $name (rc=$rc${gtest:+; $gtest})"; failed=1; fi
}

# The bundle: carried, or built here when the build can run here.
bundle=${GPU_CHECK_BUNDLE:-$root/gpubundle}
export LD_LIBRARY_PATH=$bundle/lib:$LD_LIBRARY_PATH
if [ ! -x "$bundle/braid-bench" ]; then
  if [ -z "${GPU_CHECK_BUNDLE:-}" ] && command -v nvcc >/dev/null && [ -x bench/make_gpubundle.sh ]; then
    echo "gpu_check: no gpubundle/: building it (bench/make_gpubundle.sh)"
    bash bench/make_gpubundle.sh > "$logs/make_gpubundle.log" 2>&1 || { say "- **FAIL** building gpubundle/ (logs/make_gpubundle.log)"; failed=1; }
  else
    say "- **FAIL** no gpubundle/ and no CUDA build here: run bench/make_gpubundle.sh on the CPU machine and carry gpubundle"
    cat "$summary"; exit 1
  fi
fi
export BRAID_BUILD_DIR=$bundle   # `braid` finds the bundle's tools and libbraid.so
braid=(env PYTHONPATH="$root/python" python3 -m braid)

part_tests() {
  say "## tests"
  local g=$bundle
  # What braid sees here: GPUs, links, the real NCCL, PyTorch, the PCIe ceiling measured.
  check doctor 120 "${braid[@]}" doctor
  grep -E "^GPUs:|^real NCCL|^PyTorch|ceiling \(slowest" "$logs/doctor.log" | sed 's/^/    /' >> "$summary"
  export BRAID_TIMEOUT=20 BRAID_DEBUG=WARN
  [ -x $g/api_usage_test ] && check api_usage 100 $g/api_usage_test
  [ -x $g/api_collectives_threads_test ] && check api_threads 150 $g/api_collectives_threads_test
  [ -x $g/api_collectives_processes_test ] && check api_processes 120 $g/api_collectives_processes_test
  [ -x $g/cuda_peer_reduce_gpu_test ] && check cuda_peer_reduce 60 $g/cuda_peer_reduce_gpu_test
  # braid's NVLink path between two processes on GPU 0: cuMem buffers by fd, cudaMalloc by CUDA IPC.
  [ -x $g/peer_allocation_share_gpu_test ] && check peer_allocation_share 100 $g/peer_allocation_share_gpu_test
  check shim_multipath 150 $g/shim_multipath_gpu_test
  check shim_multipath_nvlink_nccl 150 env BRAID_NVLINK_PATH=nccl $g/shim_multipath_gpu_test
  check shim_multipath_copy_share 150 env BRAID_NVLINK_PATH=nccl BRAID_SPLIT_NCCL_SHARE=copy $g/shim_multipath_gpu_test
  check shim_group 100 $g/shim_group_gpu_test
  [ -x $g/shim_pcie_engine_gpu_test ] && check shim_pcie_engine 100 $g/shim_pcie_engine_gpu_test
  [ -x $g/shim_pcie_engine_gpu_test ] && check shim_pcie_engine_static 100 \
    env BRAID_BALANCER=static BRAID_STATIC_SHARE=0.25 BRAID_PCIE_ENGINE_EXPECTED=1 $g/shim_pcie_engine_gpu_test
  [ -x $g/shim_argument_fuzz_gpu ] && check shim_argument_fuzz 100 $g/shim_argument_fuzz_gpu
  if [ $have_torch = 1 ]; then
    # PyTorch's own collectives, exact, blocking and non-blocking communicators (one GPU: the rig's
    # wrapper makes the two ranks two hosts).
    local launch=(python3 -m torch.distributed.run --standalone --nproc_per_node=2)
    [ "$gpus" -lt 2 ] && launch+=(--no-python bash bench/rig/one-gpu-rank.sh python3) || launch+=(--no-python python3)
    check torch_collectives 150 "${braid[@]}" run --trace "$dir/split.jsonl" -- "${launch[@]}" \
      bench/checks/torch_collectives.py
    # Its split trace, plotted: the balancer's shares and each path's time per call.
    check split_trace_plot 60 "${braid[@]}" trace "$dir/split.jsonl" -o "$dir/split.png"
    check torch_collectives_nonblocking 150 env TORCH_NCCL_USE_COMM_NONBLOCKING=1 "${braid[@]}" run -- "${launch[@]}" \
      bench/checks/torch_collectives.py
    # A seeded mixed sequence over three process groups, every result checked, plain then preloaded
    # (one GPU: the rig's shape); its loop times are printed, not judged here.
    check mixed_collectives 150 python3 bench/mixed_collectives.py --ranks 2 --calls 300 --max-mb 8 --pairs 1 \
      --timeout 60 --braid "$bundle/lib/libbraid.so"
    grep -E "loop_s|wrong elements" "$logs/mixed_collectives.log" | sed 's/^/    /' >> "$summary"
  fi
  if [ "$gpus" -ge 2 ] && [ $have_torch = 1 ]; then
    check torchrun_peer_path 150 "${braid[@]}" run -- python3 -m torch.distributed.run --standalone --nproc_per_node=2 \
      bench/ddp/peer_path_check.py
    check torchrun_peer_path_uncached 150 env PYTORCH_NO_CUDA_MEMORY_CACHING=1 "${braid[@]}" run -- python3 -m \
      torch.distributed.run --standalone --nproc_per_node=2 bench/ddp/peer_path_check.py
  else
    say "- skipped: torchrun checks (need 2 GPUs and PyTorch)"
  fi
  unset BRAID_TIMEOUT BRAID_DEBUG
}

part_main() {
  say "## main job (braid bench)"
  if [ "$gpus" -lt 2 ]; then say "- skipped: one GPU (multipath needs 2; the rig covers the drop-in)"; return; fi
  local quick=()
  fits 400 || quick=(--quick)
  local args=(--out "$dir/main" "${quick[@]}")
  [ -n "${GPU_CHECK_BASELINE:-}" ] && args+=(--check "$GPU_CHECK_BASELINE")
  check main_job "$(until_end 10)" "${braid[@]}" bench "${args[@]}"
  grep -E "^  ratio |REGRESSION|MISSING|PASS$|FAIL$" "$logs/main_job.log" | sed 's/^/    /' >> "$summary"
  [ -f "$dir/main/algbw.png" ] && say "    plot: main/algbw.png"
}

# The balancer under PCIe bursts: all_reduce 256 MB over quiet, noisy and quiet phases, once
# adapting and once with a static split tuned in the first quiet phase.
part_phases() {
  say "## balancer under PCIe bursts"
  if [ "$gpus" -lt 2 ]; then say "- skipped: one GPU"; return; fi
  mkdir -p "$dir/main"
  check balancer_phases 140 "$bundle/braid-bench" --multipath --paths braid -C all_reduce -b 256M -e 256M -w 30 \
    --phases off:30,on:30,off:30 --noise-bytes 256M -J "$dir/main/phases.json"
  grep -A4 "^# phase" "$logs/balancer_phases.log" | sed 's/^/    /' >> "$summary"
}

part_rig() {
  say "## one-GPU rig (nccl-tests through the drop-in)"
  if [ ! -f .rig/rig.tar.xz ]; then say "- skipped: no .rig/ (bench/rig/prepare.sh on the CPU machine, then carry .rig)"; return; fi
  local suites=(${RIG_SUITES:-correctness 2 hosttime 2})
  check rig "$(until_end 5)" env OUT="$dir/rig" RIG_BUDGET="$(until_end 15)" bash bench/rig/run.sh "${suites[@]}"
  [ -f "$dir/rig/summary.txt" ] && sed 's/^/    /' "$dir/rig/summary.txt" | tail -15 >> "$summary"
}

# A benchmark run plain and preloaded by its own script (bench/train/run.sh, bench/moe/run.sh):
# one GPU per rank, or 2 ranks on the rig's wrapper with one GPU. Its summary goes in ours.
preloaded_benchmark() {
  local name=$1 script=$2
  say "## $name ($script)"
  if [ $have_torch = 0 ]; then say "- skipped: no PyTorch"; return; fi
  local wrapper=()
  [ "$gpus" -lt 2 ] && wrapper=(WRAPPER=bench/rig/one-gpu-rank.sh RANKS=2)
  check "$name" "$(until_end 5)" env OUT="$dir" BRAID_LIB="$bundle/lib/libbraid.so" "${wrapper[@]}" bash "$script"
  for f in "$dir/$name/summary.md" "$dir/$name/compare.txt"; do
    [ -f "$f" ] && sed 's/^/    /' "$f" | tail -15 >> "$summary"
  done
}
part_train() { preloaded_benchmark train bench/train/run.sh; }
part_moe() { preloaded_benchmark moe bench/moe/run.sh; }

# The least each part needs to be worth starting (seconds).
declare -A need=([tests]=150 [main]=120 [phases]=120 [rig]=120 [train]=120 [moe]=90)
parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(tests main phases rig train moe)
for p in "${parts[@]}"; do
  if [ -z "${need[$p]:-}" ]; then echo "gpu_check: unknown part '$p' (tests main phases rig train moe)"; exit 2; fi
  if ! fits "${need[$p]}"; then left+=("$p"); continue; fi
  echo "gpu_check: $p ($(remaining) s of the budget left)"
  part=$p
  "part_$p"
done

say ""
if [ ${#left[@]} -gt 0 ]; then
  say "Not run, out of budget: ${left[*]}. Next call: bash bench/gpu_check.sh ${left[*]}"
fi
say "Took $(( $(date +%s) - start )) s of GPU_CHECK_BUDGET=$budget. Verdict: $([ $failed = 0 ] && echo PASS || echo FAIL)"
kept=()
for d in rig train moe; do [ -d "$dir/$d" ] && kept+=("$d"); done
tar czf "$dir/logs.tar.gz" -C "$dir" logs "${kept[@]}" 2>/dev/null && rm -rf "$logs" "${kept[@]/#/$dir/}"
cat "$summary"
echo "gpu_check: $dir"
exit $failed
