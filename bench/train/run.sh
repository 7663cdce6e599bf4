#!/usr/bin/env bash
# Real training as the benchmark: every case of bench/train/train.py on plain NCCL and with braid's
# drop-in (LD_PRELOAD=libbraid.so), alternating plain, braid, plain, braid, then compare.py on each
# case. Run on the GPU machine from the repository root, with the bundle built
# (bench/make_gpubundle.sh):
#
#   bash bench/train/run.sh                                        # a GPU per rank, every GPU
#   WRAPPER=bench/rig/one-gpu-rank.sh RANKS=2 bash bench/train/run.sh   # the one-GPU rig
#
# Extra arguments go to every train.py run (e.g. --steps 30). Settings, from the environment:
#   RANKS      processes (torchrun --nproc_per_node); default: the GPU count, or 2 with WRAPPER
#   WRAPPER    wraps each rank (torchrun --no-python bash $WRAPPER python3 train.py ...): the
#              one-GPU rig's bench/rig/one-gpu-rank.sh. Unset: one GPU per rank (cuda:LOCAL_RANK)
#   SCALE      train.py --scale: rig (default with WRAPPER) or full (default without)
#   REPS       plain/braid pairs per case (default 2)
#   CASES      default "ddp-comm-b25 ddp-comm-b256 fsdp ddp-compute"; also ddp-comm-b<MB>,
#              ddp-comm-compiled and fsdp-compiled (torch.compile; give them TIMEOUT=300)
#   STEPS, WARMUP   train.py --steps/--warmup (default: the scale's preset)
#   BRAID_LIB  the drop-in (default gpubundle/lib/libbraid.so)
#   TIMEOUT    seconds per run (default 90 at rig scale, 240 at full; a run takes ~10-20 s). After
#              a run times out (a hang), the case's later runs of that variant are skipped
#   PYTHON     default python3
#   BRAID_DEBUG     braid runs' log level (default WARN), to $OUT/train/braid.<run>.<pid>.log
# Output under $OUT/train/ ($OUT from bench/gpu_env.sh, default /tmp/out): <case>.<plain|braid>.<rep>
# .{json,log}, compare.<case>.txt, summary.md. Exit status 0 when every run finished and every
# case's losses agree; the speed never decides it.
set -u
cd "$(dirname "$0")/../.."
source bench/gpu_env.sh
export NCCL_NVLS_ENABLE=0

here=bench/train
T=$OUT/train
mkdir -p "$T"
PY=${PYTHON:-python3}
WRAPPER=${WRAPPER:-}
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [ -n "$WRAPPER" ]; then
  [ -f "$WRAPPER" ] || { echo "WRAPPER=$WRAPPER: no such file" >&2; exit 2; }
  WRAPPER=$(realpath "$WRAPPER")
  RANKS=${RANKS:-2}
  SCALE=${SCALE:-rig}
else
  RANKS=${RANKS:-$gpus}
  SCALE=${SCALE:-full}
fi
[ "${RANKS:-0}" -ge 1 ] 2>/dev/null || { echo "RANKS=${RANKS:-} (no GPU found?): set RANKS" >&2; exit 2; }
REPS=${REPS:-2}
CASES=${CASES:-ddp-comm-b25 ddp-comm-b256 fsdp ddp-compute}
if [ "$SCALE" = rig ]; then TIMEOUT=${TIMEOUT:-90}; else TIMEOUT=${TIMEOUT:-240}; fi
BRAID_LIB=$(realpath -m "${BRAID_LIB:-$G/lib/libbraid.so}")
[ -f "$BRAID_LIB" ] || echo "warning: BRAID_LIB=$BRAID_LIB does not exist: the braid runs will fail" >&2

extra=()
[ -n "${STEPS:-}" ] && extra+=(--steps "$STEPS")
[ -n "${WARMUP:-}" ] && extra+=(--warmup "$WARMUP")
extra+=("$@")

case_args() {
  case "$1" in
    ddp-comm-b25) echo "--model ddp-comm --bucket-cap-mb 25" ;;
    ddp-comm-b256) echo "--model ddp-comm --bucket-cap-mb 256" ;;
    ddp-comm-b*) echo "--model ddp-comm --bucket-cap-mb ${1#ddp-comm-b}" ;;
    fsdp) echo "--model fsdp" ;;
    ddp-compute) echo "--model ddp-compute" ;;
    ddp-comm-compiled) echo "--model ddp-comm --compile" ;;
    fsdp-compiled) echo "--model fsdp --compile" ;;
    *) return 1 ;;
  esac
}
for c in $CASES; do case_args "$c" >/dev/null || { echo "unknown case $c" >&2; exit 2; }; done

launch=("$PY" -m torch.distributed.run --standalone --nproc_per_node="$RANKS")
if [ -n "$WRAPPER" ]; then
  launch+=(--no-python bash "$WRAPPER" "$PY" "$here/train.py")
else
  launch+=("$here/train.py")
fi

echo "## bench/train: $gpus GPUs, RANKS=$RANKS SCALE=$SCALE REPS=$REPS WRAPPER=${WRAPPER:-none}"
echo "## cases: $CASES; train.py extra args: ${extra[*]:-none}; timeout ${TIMEOUT}s per run"
echo "## BRAID_LIB=$BRAID_LIB OUT=$T"
start_all=$SECONDS
failed_runs=0

# run NAME VARIANT ARGS...: one torchrun job; VARIANT braid preloads the drop-in.
run_one() {
  local name=$1 variant=$2; shift 2
  local json=$T/$name.json log=$T/$name.log t0=$SECONDS rc
  rm -f "$json" "$T"/braid."$name".*.log
  if [ "$variant" = braid ]; then
    LD_PRELOAD=$BRAID_LIB BRAID_DEBUG=${BRAID_DEBUG:-WARN} BRAID_DEBUG_FILE="$T/braid.$name.%p.log" \
      timeout -k 15 "$TIMEOUT" "${launch[@]}" "$@" --out "$json" >"$log" 2>&1
  else
    timeout -k 15 "$TIMEOUT" "${launch[@]}" "$@" --out "$json" >"$log" 2>&1
  fi
  rc=$?
  last_rc=$rc
  local med="-"
  [ -f "$json" ] && med=$("$PY" -c "import json,sys; print('%.2f ms' % (1e3 * json.load(open(sys.argv[1]))['median_step_time_s']))" "$json" 2>/dev/null)
  echo "run $name: rc=$rc$(case $rc in 124|137) echo ' (timed out)';; esac) median step ${med:-?} ($((SECONDS - t0)) s)"
  if [ $rc != 0 ]; then
    failed_runs=$((failed_runs + 1))
    grep -v '^\s*$' "$log" | grep -iE 'error|exception|abort|timed out|fail' | head -5 | sed 's/^/    /'
  fi
}

rows=()
summaries=()
failed_cases=0
for c in $CASES; do
  read -r -a args <<<"$(case_args "$c")"
  echo "## $c: ${args[*]} ${extra[*]}"
  files=()
  hung_plain="" hung_braid=""
  for rep in $(seq 1 "$REPS"); do
    for variant in plain braid; do
      files+=("$T/$c.$variant.$rep.json")
      hung=hung_$variant
      if [ -n "${!hung}" ]; then
        rm -f "$T/$c.$variant.$rep.json"
        echo "run $c.$variant.$rep: skipped (${!hung} timed out)"
        failed_runs=$((failed_runs + 1))
        continue
      fi
      run_one "$c.$variant.$rep" "$variant" "${args[@]}" --scale "$SCALE" "${extra[@]}"
      case $last_rc in 124|137) printf -v "$hung" '%s' "$c.$variant.$rep" ;; esac
    done
  done
  "$PY" "$here/compare.py" --label "$c" --json "$T/compare.$c.json" "${files[@]}" >"$T/compare.$c.txt" 2>&1
  [ $? = 0 ] || failed_cases=$((failed_cases + 1))
  grep -E '^(FAIL|note):' "$T/compare.$c.txt" | head -8 | sed 's/^/    /'
  rows+=("$(grep '^| ' "$T/compare.$c.txt" | tail -1)")
  summaries+=("$(grep '^SUMMARY' "$T/compare.$c.txt")")
  echo "${summaries[-1]}"
done

{
  echo "Ranks $RANKS, scale $SCALE, $REPS plain/braid pairs per case, $gpus GPUs$([ -n "$WRAPPER" ] && echo ", one-GPU rig (only losses and hangs are meaningful, not speed)")."
  echo "plain/braid > 1: braid faster. Targets: >= 1.00 in every case; >= 1.08 where communication dominates (2+ GPUs, NVLink)."
  echo
  "$PY" -c "import sys; sys.path.insert(0, '$here'); import compare; print(compare.HEADER); print(compare.RULE)"
  printf '%s\n' "${rows[@]}"
  echo
  printf '%s\n' "${summaries[@]}"
} >"$T/summary.md"
echo "## table ($T/summary.md)"
cat "$T/summary.md"
echo "## done in $((SECONDS - start_all)) s: $failed_runs failed runs, $failed_cases failing cases"
[ $failed_runs = 0 ] && [ $failed_cases = 0 ]
