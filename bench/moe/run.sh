#!/usr/bin/env bash
# The MoE benchmark (bench/moe/moe.py) on plain NCCL and with braid's drop-in (LD_PRELOAD), 
# alternating plain, braid, plain, braid, then compare.py. Run on the GPU machine from the
# repository root with the bundle built (bench/make_gpubundle.sh):
#
#   bash bench/moe/run.sh                                             # a GPU per rank
#   WRAPPER=bench/rig/one-gpu-rank.sh RANKS=2 bash bench/moe/run.sh   # the one-GPU rig
#   WRAPPER=bench/rig/one-gpu-rank.sh RANKS=4 bash bench/moe/run.sh
#
# Extra arguments go to every moe.py run (e.g. --skews 0,2.0 --steps 30). Settings, from the
# environment: RANKS (default: the GPU count, or 2 with WRAPPER), WRAPPER (as bench/train/run.sh),
# SCALE (rig with WRAPPER, else full), REPS (plain/braid pairs, default 2), BRAID_LIB (default
# gpubundle/lib/libbraid.so), TIMEOUT (seconds per run, default 120), PYTHON, BRAID_DEBUG (braid
# runs' log level, default WARN). braid's own settings pass through the environment, e.g. its
# routing: BRAID_ROUTE_EXCHANGES=1 BRAID_DEBUG=INFO (on the rig also BRAID_PEER_SAME_GPU=1 and
# BRAID_ROUTE_TOPOLOGY=bench/rig/route-mesh4.json); the routed exchanges logged are counted at the
# end. At rig scale (1 MiB of tokens per rank) no flow reaches braid's default BRAID_ROUTE_MIN_BYTES
# (1 MiB) and braid says so at INFO: give larger --tokens/--hidden to see routing there.
# Output under $OUT/moe/: <plain|braid>.<rep>.{json,log}, compare.txt. Exit status 0 when every run
# finished with every value exact.
set -u
cd "$(dirname "$0")/../.."
source bench/gpu_env.sh

here=bench/moe
T=$OUT/moe
mkdir -p "$T"
PY=${PYTHON:-python3}
WRAPPER=${WRAPPER:+$(realpath "$WRAPPER")}
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
# The rig (a WRAPPER) defaults to 2 ranks at rig scale; else a GPU per rank at full scale.
RANKS=${RANKS:-$([ -n "$WRAPPER" ] && echo 2 || echo "$gpus")}
SCALE=${SCALE:-$([ -n "$WRAPPER" ] && echo rig || echo full)}
REPS=${REPS:-2}
TIMEOUT=${TIMEOUT:-120}
BRAID_LIB=$(realpath -m "${BRAID_LIB:-$G/lib/libbraid.so}")
[ -f "$BRAID_LIB" ] || echo "warning: BRAID_LIB=$BRAID_LIB does not exist: the braid runs will fail" >&2

launch=("$PY" -m torch.distributed.run --standalone --nproc_per_node="$RANKS")
[ -n "$WRAPPER" ] && launch+=(--no-python bash "$WRAPPER" "$PY")
launch+=("$here/moe.py")

echo "## bench/moe: $gpus GPUs, RANKS=$RANKS SCALE=$SCALE REPS=$REPS WRAPPER=${WRAPPER:-none} BRAID_LIB=$BRAID_LIB" \
  "BRAID_ROUTE_EXCHANGES=${BRAID_ROUTE_EXCHANGES:-unset} BRAID_ROUTE_MIN_BYTES=${BRAID_ROUTE_MIN_BYTES:-default}"
status=0
files=()
for rep in $(seq 1 "$REPS"); do
  for variant in plain braid; do
    json=$T/$variant.$rep.json
    rm -f "$json"
    if [ $variant = braid ]; then
      env LD_PRELOAD="$BRAID_LIB" BRAID_DEBUG="${BRAID_DEBUG:-WARN}" BRAID_DEBUG_FILE="$T/braid.$rep.%p.log" \
        timeout "$TIMEOUT" "${launch[@]}" --scale "$SCALE" --out "$json" "$@" > "$T/$variant.$rep.log" 2>&1
    else
      timeout "$TIMEOUT" "${launch[@]}" --scale "$SCALE" --out "$json" "$@" > "$T/$variant.$rep.log" 2>&1
    fi
    rc=$?
    echo "$variant $rep: exit $rc ($T/$variant.$rep.log)"
    tail -n 6 "$T/$variant.$rep.log" | grep -E '^skew|Error|error' || true
    [ $rc -eq 0 ] || status=1
    files+=("$json")
  done
done
if [ $status -eq 0 ]; then
  "$PY" "$here/compare.py" "${files[@]}" | tee "$T/compare.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi
# With BRAID_ROUTE_EXCHANGES (and BRAID_DEBUG=INFO), braid logs one line per routed exchange: the
# proof that the token dispatch went through braid's routing rather than NCCL.
routed=$(cat "$T"/braid.*.log 2>/dev/null | grep -c "routed exchange: [0-9]* flows")
echo "braid runs: $routed routed exchanges logged (BRAID_ROUTE_EXCHANGES=${BRAID_ROUTE_EXCHANGES:-unset}, BRAID_DEBUG=${BRAID_DEBUG:-WARN})" | tee -a "$T/compare.txt"
exit $status
