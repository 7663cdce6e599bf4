#!/usr/bin/env bash
# A two-GPU machine, carry .rig gpubundle. Is braid's slower DDP step in ../gpus2-eager-lane/ (one
# pair, 25 MB buckets, nothing split) eager module loading's? DDP with 25 MB buckets: two pairs
# at default settings (braid sets CUDA_MODULE_LOADING=EAGER), one pair with braid loading lazily
# (BRAID_EAGER_MODULE_LOADING=0), one pair with both loading eagerly (CUDA_MODULE_LOADING=EAGER).
cd "$(dirname "$0")/../../.." || exit 2
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0
{ nvidia-smi -L; nproc; } > "$OUT/gpu.txt" 2>&1
variant() {  # name reps [env...]
  local name=$1 reps=$2; shift 2
  (env "$@" OUT=$OUT/$name CASES=ddp-comm-b25 REPS=$reps TIMEOUT=60 timeout 170 bash bench/train/run.sh) > "$OUT/$name-console.txt" 2>&1
  echo "== $name rc=$? ($SECONDS s)"; grep -E "^run |^SUMMARY" "$OUT/$name-console.txt" | sort -u | head -6
}
# A second call (RUN=2): braid preloaded but passing every call through (BRAID_DISABLE=1), so that
# the pairs differ only in the module loading braid asks for (eager) against plain's (lazy).
if [[ ${RUN:-1} == 2 ]]; then
  variant disabled-eager 3 BRAID_DISABLE=1
  cd "$OUT" && tar czf logs.tgz --exclude=logs.tgz disabled-eager; rm -rf disabled-eager
  exit 0
fi
variant default 2
variant braid-lazy 1 BRAID_EAGER_MODULE_LOADING=0
variant both-eager 1 CUDA_MODULE_LOADING=EAGER
cd "$OUT" && tar czf logs.tgz --exclude=logs.tgz default braid-lazy both-eager 2>/dev/null; rm -rf default braid-lazy both-eager
