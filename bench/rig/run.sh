#!/usr/bin/env bash
# The one-GPU rig, on the GPU machine: N processes share GPU 0, each posing as its own host to NCCL
# (bench/rig/one-gpu-rank.sh), launched by MPICH's mpiexec, with and without LD_PRELOAD=libbraid.so.
# Needs .rig/ (bench/rig/prepare.sh, run on the CPU machine) and gpubundle/ (bench/make_gpubundle.sh)
# carried. Run from anywhere, in one device call (see bench/rig/README.md):
#   bash bench/rig/run.sh SUITE [N] [SUITE [N]]...      e.g.  correctness 2 dying 2 hosttime 2 fuzz
# Suites (a preflight runs first: all_reduce on 2 ranks, plain and through braid, which must name
# the real NCCL it forwards to; RIG_PREFLIGHT=0 skips it):
#   correctness N  nccl-tests through braid, 5 collectives, every type and operator at 1K, 64K and 4M,
#                  every type at 256M (operators: RIG_LARGE_OPS, default sum; "all" for all six);
#                  every call from 1 MiB given a PCIe share of RIG_CHECK_SHARE (0.25; "auto": braid's
#                  own balancer, which gives none in a row's few calls), as in the modes suite;
#                  plus, once per run, plain NCCL at N=2 up to 4M as the baseline
#   dying N        bench/rig/dying_rank.cpp, 256 MB: the last rank leaves after 20 all-reduces; time
#                  to the error and to abort, plain and through braid
#   faults N       BRAID_FAULT at each step of braid's setup and run (segments, register, barrier,
#                  d2h, h2d, copy, reduce; two of them mid-run) on the last rank, under
#                  dying_rank --victim none with BRAID_TIMEOUT=5: every rank returns, the same way
#   fuzz           $FUZZ_BIN (with $FUZZ_ARGS) on 2 ranks, plain and through braid; skipped if unset
#   mixed N        gpubundle/shim_mixed_buffers_gpu: pinned host buffers on rank 0 (RIG_MIXED_HOST_RANKS),
#                  device buffers on the others, every collective braid splits checked exactly,
#                  plain and through braid (RIG_MIXED_HOW: "plain braid")
#   hosttime N     all_reduce_perf -C 1 (host time per call: a loop of 30 calls' mean), 4K to 256M,
#                  plain and through braid alternating, RIG_HOSTTIME_ROUNDS rounds (3); medians over
#                  rounds compared; then gpubundle/host_time_probe (each call timed alone: per size the
#                  median of 30 calls) the same way; RIG_HOSTTIME_TOOLS picks them ("nccl-tests probe"),
#                  RIG_HOSTTIME_COLLS the collectives ("all_reduce"; also all_gather), and
#                  RIG_HOSTTIME_PER_GPU=1 puts each rank on a GPU of its own (a machine with N GPUs)
#   shm N          a small /dev/shm (RIG_SHM_SIZES, "8m 64m"; unshare -m), nccl-tests all_reduce and
#                  all_gather -c 1, plain and through braid with a PCIe share in every split call; a GPU
#                  per rank where the machine has N (on the rig NCCL itself needs ~34 MB per rank)
#   modes N        through braid: -G 1, -u 1, -R 1, -y 1, -z 1, -m 8, -a 3 (all_reduce, all_gather,
#                  reduce_scatter) and alltoall, sendrecv, gather, scatter, hypercube, 256 B to
#                  256 MB (RIG_MODES_SIZES)
#   net N          NCCL's inter-node path through braid's net plugin (libnccl-net-braid.so,
#                  NCCL_NET_PLUGIN=braid) against NCCL's own socket transport over the same
#                  loopback interface: plain NCCL (no libbraid.so), P2P and SHM off, nccl-tests -c 1
#                  1K to 256M for all_reduce, all_gather, reduce_scatter, sendrecv; variants
#                  plain-socket, braid-net-1nic (127.0.0.1), braid-net-2nic (127.0.0.1 and .2), and
#                  both braid ones shaped to RIG_NET_RATE MB/s per NIC (default 400); RIG_NET_VARIANTS
#                  picks variants (braid-net-1nic-2thr: one NIC, BRAID_NET_THREADS=2), RIG_NET_COLLS
#                  the collectives;
#                  bench/rig/net_table.py puts busbw and #wrong side by side (docs/NET.md)
#   compete N      issue 20's "under a competing flow on one NIC, braid beats NCCL's socket transport
#                  by >= 1.3x": bench/rig/compete.sh puts each rank in its own network namespace (a
#                  host) with 2 veth NICs shaped by tc tbf (COMPETE_MBIT, 2000), and runs sendrecv and
#                  all_reduce 32M-128M with NCCL_NET=Socket on nic0 and with braid's plugin on both
#                  NICs, each without and with a competing socket loop on nic0 (gpubundle/net_bench);
#                  falls back to loopback (said NOT FAIR) where namespaces are refused; its own budget
#                  COMPETE_BUDGET (270 s); bench/rig/compete_table.py prints the ratios (docs/NET.md)
#   gpus N         real GPUs, one per rank, on a machine with N or more: nccl-tests -t N -g 1, -g N
#                  (braid with BRAID_SPLIT_GROUPS=auto and =1), one process per GPU (every
#                  collective; alltoall also with BRAID_ROUTE_EXCHANGES=2), -p 1, -G 1,
#                  -d all -o all; -c 1, 1K to RIG_GPUS_MAX (1G); plain NCCL beside braid;
#                  bench/rig/busbw_table.py prints busbw and braid/plain per mode and size
#   speed N        real GPUs, a process per GPU (N or more GPUs): nccl-tests all_gather, all_reduce
#                  and reduce_scatter (RIG_SPEED_COLLS) -c 1 from RIG_SPEED_MIN (16M) to RIG_GPUS_MAX
#                  (1G), plain NCCL and braid alternating RIG_SPEED_PAIRS (2) times, each pair a mode
#                  of its own (mpiN-pK) in bench/rig/busbw_table.py's table, so that every ratio is in
#                  one call; RIG_SPEED_BEST=1 adds NCCL's -R 1 and -R 2 -x 2 and braid's ratio to the best;
#                  RIG_SPEED_BRAID adds braid variants with settings of their own (see suite_speed)
#   route N        NIMBLE's routed exchange behind the NCCL API (docs/ROUTING.md): nccl-tests -c 1
#                  alltoall, sendrecv, scatter, gather, hypercube (and alltoallv where the rig has
#                  it), RIG_ROUTE_SIZES (-b 1K -e 256M -f 4), plain NCCL and through braid with
#                  BRAID_ROUTE_EXCHANGES=$RIG_ROUTE_MODE (2: every ncclAlltoAll, ncclGather and
#                  ncclScatter from 1 MB per flow through braid, relayed or not),
#                  BRAID_PEER_SAME_GPU=1, BRAID_DEBUG=INFO and
#                  BRAID_ROUTE_TOPOLOGY=bench/rig/route-mesh4.json (a 4-GPU mesh with thin
#                  diagonals: 3 and 4 ranks relay); RIG_ROUTE_COLLS narrows the binaries (e.g.
#                  "alltoall gather scatter", the routed ones); bench/rig/route_table.py counts
#                  #wrong, hangs, WARN lines and the "routed exchange" INFO lines per log (alltoall,
#                  gather and scatter must have some); then dying_rank
#                  --collective alltoall (a rank leaves after 20 routed all-to-alls), plain and braid
#   copy N         braid's NVLink copy-engine path on the rig, or on a GPU per rank where the
#                  machine has N (BRAID_NVLINK_PATH=copy,
#                  BRAID_PEER_SAME_GPU=1, from 1 MB): all_reduce -d all -o all and all_gather -d all
#                  with -c 1, each split call's path counted from its BALANCE line; cuMem buffers
#                  (NCCL_CUMEM_ENABLE=1) that CUDA IPC cannot export, carried by braid's PCIe path
#                  until the refusal applies; and hosttime's -C 1 comparison with the path on
#                  (copy/hosttime/, which summarize.py compares like hosttime's), then
#                  host_time_probe per collective and size (RIG_COPY_PROBE_SIZES) with
#                  BRAID_CALLER_PROFILE=1, its phases in the summary; RIG_COPY_CHECKS=0 runs host time only
#   graph N        calls captured in CUDA graphs (nccl-tests -G) on braid's NVLink path (the copy
#                  suite's settings): all_reduce -d all -o all and all_gather -d all with -c 1, each
#                  graph replayed 3 times; cuMem buffers with -c 3 -G 5; then, with a GPU per rank,
#                  all_gather and all_reduce -G 5 with default settings, plain and braid (busbw_table.py). Counts
#                  the INFO line that says captured calls ride braid's NVLink path
#   nvlink N       braid's own NVLink path forced (BRAID_NVLINK_PATH=copy, its default thresholds)
#                  against plain NCCL, a GPU per rank (skipped with fewer GPUs): all_gather and
#                  all_reduce, one process per GPU, -c 1, RIG_NVLINK_SIZES (-b 16M -e 1G -f 4); then
#                  all_gather -G 5 the same way; busbw_table.py compares (by default the path
#                  runs on two-rank communicators only: this is how it fares on more)
#   all            correctness 2, dying 2, hosttime 2, fuzz, correctness 4, dying 4 (more than one
#                  10-minute call holds: what does not fit in RIG_BUDGET is skipped)
# Raw logs go to $OUT/<suite>/ (the exact command on each log's first line, its exit code on the
# last); at the end they are packed into $OUT/rig-logs.tar.gz (the device tool brings back 8 files
# at most) beside $OUT/summary.txt, bench/rig/summarize.py's verdict, which is also printed.
# Every command is bounded by `timeout`, and the whole run by RIG_BUDGET seconds (default 540):
# what no longer fits is skipped and says so. Exit code: summarize.py's (0: no wrong rows, hangs or
# failures through braid).
set -u
cd "$(dirname "$0")/../.." || exit 2
root=$PWD
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
budget=${RIG_BUDGET:-540}
rig_summary=$OUT/summary.txt
: > "$rig_summary"

say() { echo "$*" | tee -a "$rig_summary"; }

# Never NVLink multicast: the host's GPUs are shared (KINDS.md).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export NCCL_DEBUG=${NCCL_DEBUG:-WARN} BRAID_DEBUG=${BRAID_DEBUG:-WARN}
# The GPU machine has no iproute2: the bundle carries ip and tc for the emulated NICs.
command -v ip >/dev/null || [[ ! -d $root/gpubundle/nettools/bin ]] || export PATH=$root/gpubundle/nettools/bin:$PATH
# MPICH only carries nccl-tests' bootstrap (a few small messages): keep it off the GPU.
export MPIR_CVAR_ENABLE_GPU=0

# The rig's binaries, packed by prepare.sh (unpacked again when the pack's MANIFEST changed).
rig=${RIG_DIR:-/tmp/rig}
if ! cmp -s .rig/MANIFEST "$rig/MANIFEST"; then
  [[ -f .rig/rig.tar.xz ]] || { echo "no .rig/rig.tar.xz: run bench/rig/prepare.sh here and carry .rig"; exit 2; }
  rm -rf "$rig" && mkdir -p "$rig"
  if command -v xz >/dev/null; then
    tar -C "$rig" -xJf .rig/rig.tar.xz
  else
    python3 -c 'import sys, tarfile; t = tarfile.open(sys.argv[1]); t.extraction_filter = getattr(tarfile, "data_filter", None); t.extractall(sys.argv[2])' .rig/rig.tar.xz "$rig"
  fi || { echo "cannot unpack .rig/rig.tar.xz"; exit 2; }
  cp .rig/MANIFEST "$rig/MANIFEST"
fi
nt=$rig/nccl-tests-mpi
export MPI_HOME=$rig/mpich
export PATH=$MPI_HOME/bin:$PATH

# The system NCCL (as gpu_env.sh finds it, the loader's own first) and braid's bundle. MPICH's
# libraries come first: an older libfabric in the image breaks MPICH.
nccl=$(ldconfig -p 2>/dev/null | awk '/libnccl\.so\.2 /{print $NF; exit}')
[[ -n $nccl ]] || nccl=$(find / -name 'libnccl.so.2' -not -path '/proc/*' 2>/dev/null | grep -v gpubundle | head -1)
[[ -n $nccl ]] || { echo "no libnccl.so.2 on this machine"; exit 2; }
nccl_dir=$(dirname "$nccl")
export LD_LIBRARY_PATH=$MPI_HOME/lib/mpich:$MPI_HOME/lib:$root/gpubundle/lib:$nccl_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
braid_so=${RIG_BRAID_SO:-$root/gpubundle/lib/libbraid.so}
[[ -f $braid_so ]] || say "WARNING: no $braid_so (bench/make_gpubundle.sh, carry gpubundle): braid runs will fail"
wrap=$root/bench/rig/one-gpu-rank.sh
# Unbuffered output from the ranks: a log cut by a timeout still shows the row that hung.
unbuf=(); command -v stdbuf >/dev/null && unbuf=(stdbuf -o0 -e0)

{
  echo "# bench/rig/run.sh $*"
  echo "# $(date -u +%FT%TZ) $(hostname) braid $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | sed 's/^/# GPU: /'
  echo "# real NCCL: $nccl; braid: $braid_so; MPICH: $MPI_HOME; rig: $(head -1 .rig/MANIFEST 2>/dev/null)"
  echo "# LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  env | grep -E '^(NCCL|BRAID|MPIR)_' | sort | sed 's/^/# /'
} > "$OUT/environment.txt"
cat "$OUT/environment.txt"

# Ends what a command left behind: processes our wrapper started (NCCL_HOSTID=one-gpu-rank-*),
# each by its id, so that the next command has the GPU to itself.
reap() {
  local d pid leftover=()
  for d in /proc/[0-9]*; do
    pid=${d#/proc/}
    [[ $pid == "$$" ]] && continue
    grep -qz '^NCCL_HOSTID=one-gpu-rank-' "$d/environ" 2>/dev/null && leftover+=("$pid")
  done
  if ((${#leftover[@]})); then
    echo "# reaped leftover ranks: ${leftover[*]}" >> "$1"
    kill -9 "${leftover[@]}" 2>/dev/null
    sleep 1
  fi
}

# run LOG LIMIT CMD...: the command with its output in LOG, bounded by LIMIT seconds and the budget.
run() {
  local log=$1 limit=$2; shift 2
  local left=$((budget - SECONDS))
  mkdir -p "$(dirname "$log")"
  if ((left < 30)); then
    { echo "# command: $*"; echo "# SKIPPED: ${left}s of the run's ${budget}s budget left"; } > "$log"
    say "SKIPPED (budget)  ${log#"$OUT"/}"
    return 0
  fi
  ((limit > left - 10)) && limit=$((left - 10))
  {
    echo "# command: $(printf '%q ' "$@")"
    echo "# limit: ${limit}s; started $(date -u +%T)"
  } > "$log"
  local t0=$SECONDS rc
  timeout -k 10 "$limit" "$@" < /dev/null >> "$log" 2>&1
  rc=$?
  echo "# exit: $rc after $((SECONDS - t0))s$( ((rc == 124 || rc == 137)) && echo " (TIMEOUT: killed at the ${limit}s limit)")" >> "$log"
  reap "$log"
  say "$(printf 'rc=%-3s %4ss  %s' "$rc" "$((SECONDS - t0))" "${log#"$OUT"/}")"
  return 0
}

# launch HOW N [VAR VALUE]...: the launcher of N ranks, plain NCCL or through braid, in the array L,
# with VAR=VALUE for the ranks. LD_PRELOAD reaches the ranks only (-genv), not mpiexec's proxies.
launch() {
  local how=$1 n=$2
  shift 2
  L=(mpiexec -n "$n")
  [[ $how == braid ]] && L+=(-genv LD_PRELOAD "$braid_so")
  while (($# >= 2)); do L+=(-genv "$1" "$2"); shift 2; done
  # RIG_ENV: "NAME value ..." pairs every launch gets last (so they win), e.g. a setting to try.
  local -a extra
  read -r -a extra <<< "${RIG_ENV:-}"
  while ((${#extra[@]} >= 2)); do L+=(-genv "${extra[0]}" "${extra[1]}"); extra=("${extra[@]:2}"); done
  L+=(${rank_wrap[@]+"${rank_wrap[@]}"} "${unbuf[@]}")
}
rank_wrap=("$wrap")
# The GPUs this machine has: suites that can give each rank a GPU of its own ask it.
gpus_here() { nvidia-smi -L 2>/dev/null | grep -c '^GPU'; }

# nccl-tests, every type and operator, through braid. -w 0: nccl-tests' warm-up walks every size
# from -b to -e in steps of 2 whatever -f says; each row still starts with an untimed call of its
# own, then -n 1 timed and one checked call, out of place and in place: 6 calls a row. -T 40: a
# call that does not complete in 40 s aborts the test (braid's own peer timeout is 30 s).
# Rows: all_reduce, reduce_scatter and reduce 12 types x 6 operators (sum prod max min avg mulsum),
# all_gather and broadcast 12 types. The matrix runs at 1K, 64K and 4M (-f 64): 720 rows, split
# and unsplit sizes (braid sends collectives under 1 MiB to NCCL alone here). 256 MB, where braid's
# path runs in many slices, has a run of its own with every type and RIG_LARGE_OPS (default sum:
# 60 rows; "all" makes it the whole 240-row matrix, about 4x the time, for a call of its own).
# RIG_COLLS narrows the matrix to some collectives (a check of one path setting, say).
# Checked calls must cross braid's own path: HyLink's balancer gives no PCIe element before its
# 256-call settle lag, which a row's 6 calls never reach, so the matrix would check NCCL alone.
# The correctness and modes suites (and the gpus suite's -d all -o all) give every call from 1 MiB
# a share of RIG_CHECK_SHARE (0.25) through the static balancer, also where braid would leave the
# PCIe share off (four ranks on NVLink); RIG_CHECK_SHARE=auto leaves braid's own rules (what users run).
checked_share=()
[[ ${RIG_CHECK_SHARE:-0.25} == auto ]] ||
  checked_share=(BRAID_BALANCER static BRAID_STATIC_SHARE "${RIG_CHECK_SHARE:-0.25}" BRAID_SPLIT_MIN_BYTES 1M)
read -r -a colls <<< "${RIG_COLLS:-all_reduce reduce_scatter reduce all_gather broadcast}"
common=(-d all -c 1 -n 1 -w 0 -T 40)
baseline_done=0
suite_correctness() {
  local n=$1 c
  launch braid "$n" ${checked_share[@]+"${checked_share[@]}"}
  for c in "${colls[@]}"; do
    run "$OUT/correctness/braid_n${n}_${c}.log" 120 "${L[@]}" "$nt/${c}_perf" "${common[@]}" -o all -b 1K -e 4M -f 64
    run "$OUT/correctness/braid_n${n}_${c}_256M.log" "${RIG_LARGE_LIMIT:-150}" "${L[@]}" "$nt/${c}_perf" \
      "${common[@]}" -o "${RIG_LARGE_OPS:-sum}" -b 256M -e 256M
  done
  # Plain NCCL, the same matrix up to 4 MB on 2 ranks, once per run: the baseline.
  if ((!baseline_done)); then
    baseline_done=1
    launch plain 2
    for c in "${colls[@]}"; do
      run "$OUT/correctness/plain_n2_${c}.log" 90 "${L[@]}" "$nt/${c}_perf" "${common[@]}" -o all -b 1K -e 4M -f 64
    done
  fi
}

# nccl-tests' launch modes that run with one process per rank, through braid, float sum with its
# check, split and unsplit sizes (256 B to 256 MB): CUDA graphs (-G), misaligned buffers (-u), buffer
# registration (-R), the default stream (-y), blocking calls (-z), several operations in one group
# (-m), and the collectives braid passes to NCCL (alltoall, sendrecv, gather, scatter, hypercube).
suite_modes() {
  # 256 B to 256 MB in six sizes (RIG_MODES_SIZES: nccl-tests' own -b/-e/-f flags).
  local n=$1 c m sizes=${RIG_MODES_SIZES:--b 256 -e 256M -f 16}
  launch braid "$n" ${checked_share[@]+"${checked_share[@]}"}
  for m in "-G 1" "-u 1" "-R 1" "-y 1" "-z 1" "-m 8" "-a 3"; do
    for c in all_reduce all_gather reduce_scatter; do
      # shellcheck disable=SC2086  # a flag and its value, split on purpose
      run "$OUT/modes/braid_n${n}_${c}_${m// /}.log" 90 "${L[@]}" "$nt/${c}_perf" $sizes -n 2 -w 1 -c 1 -T 40 $m
    done
  done
  for c in alltoall sendrecv gather scatter hypercube; do
    run "$OUT/modes/braid_n${n}_${c}.log" 90 "${L[@]}" "$nt/${c}_perf" $sizes -n 2 -w 1 -c 1 -T 40
  done
}

# A small /dev/shm (issue 43): each launch in a mount namespace of its own (unshare -m, as root)
# whose /dev/shm is a tmpfs of each size in RIG_SHM_SIZES (default "8m 64m": below and at Docker's
# default), nccl-tests all_reduce and all_gather -c 1, 1M-64M, plain NCCL and through braid with a
# PCIe share in every split call (static 0.25, from 1 MiB), so that braid asks /dev/shm for its
# staging. A GPU per rank where the machine has N; else the rig, where NCCL's own proxy takes ~34 MB
# of /dev/shm per rank (src/proxy.cc, proxyProgressInit), so small sizes fail plain NCCL there too.
# Each braid log's WARN says what /dev/shm holds, what braid needs and what to do.
suite_shm() {
  local n=$1 size c how
  local -a saved_wrap=("${rank_wrap[@]}")
  (($(gpus_here) >= n)) && rank_wrap=()
  for size in ${RIG_SHM_SIZES:-8m 64m}; do
    for c in all_reduce all_gather; do
      for how in plain braid; do
        launch "$how" "$n" BRAID_BALANCER static BRAID_STATIC_SHARE 0.25 BRAID_SPLIT_MIN_BYTES 1M
        # shellcheck disable=SC2016  # $0 and $@ are the inner shell's
        run "$OUT/shm/${how}_n${n}_${size}_${c}.log" 100 unshare -m bash -c \
          'mount -t tmpfs -o size="$0" tmpfs /dev/shm && exec "$@"' "$size" \
          "${L[@]}" "$nt/${c}_perf" -b 1M -e 64M -f 4 -n 2 -w 1 -c 1 -T 60
      done
    done
  done
  rank_wrap=("${saved_wrap[@]}")
}

# Does the rig work at all, and is braid loaded? all_reduce on 2 ranks, plain and through braid
# (with braid's SHIM log, which names the real NCCL it forwards to), before the suites.
suite_preflight() {
  local how
  for how in plain braid; do
    launch "$how" 2 BRAID_DEBUG INFO BRAID_DEBUG_SUBSYS SHIM
    run "$OUT/preflight/${how}_n2.log" 60 "${L[@]}" "$nt/all_reduce_perf" -b 1K -e 1M -f 32 -n 2 -w 1 -c 1
  done
  grep -h "NCCL drop-in" "$OUT/preflight/braid_n2.log" | head -1 | tee -a "$rig_summary"
}

# The last rank leaves after 20 all-reduces of 256 MB. Error timeout 45 s: braid waits up to
# BRAID_TIMEOUT (30 s) for a peer before it fails the call, so a 30 s detection is measured, not cut.
suite_dying() {
  local n=$1 how d
  for how in plain braid; do
    d=$(mktemp -d /tmp/rig-dying.XXXXXX)   # a fresh id file: a stale one would misdirect the ranks
    launch "$how" "$n"
    run "$OUT/dying/${how}_n${n}.log" 120 "${L[@]}" "$rig/dying_rank" --id-file "$d/id" --bytes 256M \
      --calls 20 --error-timeout "${RIG_ERROR_TIMEOUT:-45}" --abort-timeout 10 --abort-bound 2.0
    rm -rf "$d"
  done
}

# A failure injected inside braid (BRAID_FAULT=step@rank[#pass], src/engine/faults.h) at each step
# of setting up and running its share, on the last rank: dying_rank --victim none, 16 MB calls
# (split on the rig), BRAID_TIMEOUT=5 the configured bound. Every rank must return the same way:
# all fall back and complete the calls, or all see the error and abort within the bound.
suite_faults() {
  local n=$1 fault d
  for fault in segments register barrier d2h h2d copy reduce d2h@$((n - 1))#40 reduce@$((n - 1))#40; do
    [[ $fault == *@* ]] || fault=$fault@$((n - 1))
    d=$(mktemp -d /tmp/rig-faults.XXXXXX)
    # 16 MB calls are split wherever the GPUs are: on a host whose GPUs share NVLink braid would
    # otherwise split only from 128 MiB, and the run steps' faults would never fire.
    # A fixed PCIe share (the static balancer) so that braid's engine runs every call: a learned split
    # may give it nothing on a host where NCCL is fast, and no run step would be reached. The
    # BALANCE log says per call how it was split.
    # Where the engine reduces decides which steps an all-reduce takes: on the GPU (copy, reduce:
    # its choice for 2 ranks here) or on the host (h2d of the result: its choice for 4).
    local placement=auto
    [[ $fault == h2d* ]] && placement=host
    [[ $fault == copy* || $fault == reduce* ]] && placement=device
    launch braid "$n" BRAID_FAULT "$fault" BRAID_TIMEOUT "${RIG_FAULT_TIMEOUT:-5}" BRAID_SPLIT_MIN_BYTES 1048576 \
      BRAID_BALANCER static BRAID_STATIC_SHARE 0.5 BRAID_DEBUG INFO BRAID_DEBUG_SUBSYS BALANCE BRAID_REDUCE_PLACEMENT "$placement"
    run "$OUT/faults/braid_n${n}_${fault//[@#]/-}.log" 90 "${L[@]}" "$rig/dying_rank" --id-file "$d/id" --victim none \
      --bytes 16M --calls 30 --error-timeout 30 --abort-timeout 10 --abort-bound 3.0
    rm -rf "$d"
  done
}

suite_fuzz() {
  if [[ -z ${FUZZ_BIN:-} ]]; then
    mkdir -p "$OUT/fuzz"
    echo "# SKIPPED: FUZZ_BIN is not set" > "$OUT/fuzz/skipped.log"
    say "SKIPPED (FUZZ_BIN unset)  fuzz"
    return
  fi
  # shellcheck disable=SC2206  # a list of arguments, split on purpose
  local args=(${FUZZ_ARGS:-}) how
  for how in plain braid; do
    launch "$how" 2
    # The fuzz's ranks meet through a file (its own bootstrap, no MPI): a fresh one per run.
    local id_file=/tmp/braid-fuzz-id.$how.$$
    rm -f "$id_file"
    run "$OUT/fuzz/${how}_n2.log" "${RIG_FUZZ_LIMIT:-120}" env BRAID_FUZZ_ID_FILE="$id_file" "${L[@]}" "$FUZZ_BIN" "${args[@]}"
  done
}

# Ranks passing buffers of different kinds to one collective (tests/shim/mixed_buffers_gpu.cpp):
# the ranks of RIG_MIXED_HOST_RANKS (default 0) pinned host memory, the others device memory,
# every collective braid splits, each result checked exactly; plain and through braid (with the
# SHIM INFO line that says a rank stages its buffers).
suite_mixed() {
  local n=$1 how id_file bin=$root/gpubundle/shim_mixed_buffers_gpu
  for how in ${RIG_MIXED_HOW:-plain braid}; do
    launch "$how" "$n" BRAID_MIXED_HOST_RANKS "${RIG_MIXED_HOST_RANKS:-0}" BRAID_DEBUG INFO BRAID_DEBUG_SUBSYS SHIM
    # Its ranks meet through a file (its own bootstrap, no MPI): a fresh one per run.
    id_file=/tmp/braid-mixed-id.$how.$n.$$
    rm -f "$id_file"
    run "$OUT/mixed/${how}_n${n}.log" "${RIG_MIXED_LIMIT:-150}" env BRAID_MIXED_ID_FILE="$id_file" "${L[@]}" "$bin"
  done
}

# Host time per call: nccl-tests -C 1 (the enqueue loop of -n calls divided by -n, before waiting
# for them) and host_time_probe (each call timed alone, the median per size).
suite_hosttime() {
  local n=$1 how round c pre tools=" ${RIG_HOSTTIME_TOOLS:-nccl-tests probe} "
  # RIG_HOSTTIME_PER_GPU=1: a GPU per rank (a machine with n GPUs) instead of the one-GPU rig.
  local -a saved_wrap=("${rank_wrap[@]}")
  if [[ ${RIG_HOSTTIME_PER_GPU:-0} == 1 ]]; then
    local have; have=$(gpus_here)
    if ((have < n)); then say "SKIPPED hosttime $n per GPU: $have GPUs here"; return 0; fi
    rank_wrap=()
  fi
  # Plain and braid alternate, RIG_HOSTTIME_ROUNDS times (default 3): summarize.py compares the
  # medians over rounds per size, since a run's host times drift with what the machine does.
  # RIG_HOSTTIME_COLLS (default all_reduce; also all_gather) names the collectives timed.
  for ((round = 1; round <= ${RIG_HOSTTIME_ROUNDS:-3}; round++)); do
    for c in ${RIG_HOSTTIME_COLLS:-all_reduce}; do
      [[ $c == all_reduce ]] && pre= || pre=${c}_
      for how in plain braid; do
        launch "$how" "$n"
        [[ $tools != *" nccl-tests "* ]] ||
          run "$OUT/hosttime/${pre}${how}_n${n}_r${round}.log" 120 "${L[@]}" "$nt/${c}_perf" -C 1 -b 4K -e 256M -f 4 \
            -n 30 -w 5 -c 0
        [[ $tools == *" probe "* ]] || continue
        rm -f "$OUT/hosttime/probe.id"
        run "$OUT/hosttime/probe_${pre}${how}_n${n}_r${round}.log" 120 "${L[@]}" "$root/gpubundle/host_time_probe" \
          --id-file "$OUT/hosttime/probe.id" --coll "$c" -b 4K -e 256M -f 4 -n 30 -w 5
      done
    done
  done
  rm -f "$OUT/hosttime/probe.id"
  rank_wrap=("${saved_wrap[@]}")
}

# braid's net plugin against NCCL's socket transport (see the header). The ranks pose as hosts,
# so NCCL's only path between them is its net transport; P2P and SHM are off to make sure.
# NCCL_NET names the transport outright: a plugin that fails to load is an error, not a silent
# fall-back to NCCL's own sockets; NCCL_DEBUG_SUBSYS=INIT,NET logs which one ran.
suite_net() {
  local n=$1 c variant rate=${RIG_NET_RATE:-400} net_variants
  # RIG_NET_VARIANTS narrows or extends the variants: braid-net-1nic-2thr is braid on one NIC with
  # two progress threads (BRAID_NET_THREADS=2, now the default too; BRAID_NET_THREADS=1 in the
  # environment makes the other braid variants one thread's, as before), docs/NET.md.
  read -r -a net_variants <<< "${RIG_NET_VARIANTS:-plain-socket braid-net-1nic braid-net-2nic braid-net-1nic-shaped braid-net-2nic-shaped}"
  local base=(NCCL_P2P_DISABLE 1 NCCL_SHM_DISABLE 1 NCCL_DEBUG INFO NCCL_DEBUG_SUBSYS INIT,NET) net_colls
  # RIG_NET_COLLS: the collectives (the rest of nccl-tests': broadcast reduce alltoall gather
  # scatter hypercube, for a call of their own).
  read -r -a net_colls <<< "${RIG_NET_COLLS:-all_reduce all_gather reduce_scatter sendrecv}"
  for c in "${net_colls[@]}"; do
    for variant in "${net_variants[@]}"; do
      local env=("${base[@]}")
      case $variant in
        plain-socket) env+=(NCCL_NET Socket NCCL_SOCKET_IFNAME lo) ;;
        braid-net-1nic-2thr) env+=(NCCL_NET_PLUGIN braid NCCL_NET braid BRAID_NET_NICS 127.0.0.1 BRAID_NET_THREADS 2) ;;
        braid-net-1nic*) env+=(NCCL_NET_PLUGIN braid NCCL_NET braid BRAID_NET_NICS 127.0.0.1) ;;
        braid-net-2nic*) env+=(NCCL_NET_PLUGIN braid NCCL_NET braid BRAID_NET_NICS 127.0.0.1,127.0.0.2) ;;
      esac
      [[ $variant == *shaped ]] && env+=(BRAID_NET_RATE_MBPS "$rate")
      launch plain "$n" "${env[@]}"
      run "$OUT/net/${variant}_n${n}_${c}.log" 150 "${L[@]}" "$nt/${c}_perf" -b 1K -e 256M -f 4 -n 5 -w 2 -c 1 -T 60
    done
  done
  python3 "$root/bench/rig/net_table.py" "$OUT/net" | tee "$OUT/net_table.txt" | tee -a "$rig_summary"
}

# braid's plugin against NCCL's socket transport, quiet and under a competing flow on nic0, over the
# same namespaced, tc-shaped NICs (bench/rig/compete.sh, which bounds its own commands).
suite_compete() {
  local n=$1 left=$((budget - SECONDS - 20)) b=${COMPETE_BUDGET:-270}
  ((left >= 60)) || { say "SKIPPED (budget)  compete $n"; return 0; }
  ((b > left)) && b=$left
  OUT=$OUT RIG_NT=$nt NET_BENCH=${NET_BENCH:-$root/gpubundle/net_bench} COMPETE_BUDGET=$b \
    timeout -k 10 "$((b + 15))" bash "$root/bench/rig/compete.sh" "$n"
  cat "$OUT/compete/mode.txt" "$OUT/compete_table.txt" >> "$rig_summary" 2>/dev/null
  return 0
}

# Real GPUs, a process per GPU, the speed only: braid against plain NCCL in alternating pairs.
suite_speed() {
  local n=$1 p c how have sizes=(-b "${RIG_SPEED_MIN:-16M}" -e "${RIG_GPUS_MAX:-1G}" -f 4 -n 10 -w 3 -c 1 -T 40)
  have=$(gpus_here)
  if ((have < n)); then say "SKIPPED speed $n: $have GPUs here"; return 0; fi
  local -a saved_wrap=("${rank_wrap[@]}"); rank_wrap=()
  # RIG_SPEED_BEST=1 adds NCCL's own best modes to every pair, in the same call: buffer
  # registration (plain-r1: -R 1) and copy-engine collectives on symmetric memory (plain-ce:
  # -R 2 -x 2); busbw_table.py then gives braid's ratio to the best of them per size (issue 42).
  local -a variants=(plain braid)
  [[ ${RIG_SPEED_BEST:-0} == 1 ]] && variants+=(plain-r1 plain-ce)
  # RIG_SPEED_BRAID adds braid variants with settings of their own, in the same pairs:
  # "braid-NAME:VAR=value,VAR=value ...", e.g. "braid-push:BRAID_NVLINK_PATH=copy,BRAID_NVLINK_GATHER=push".
  local -A variant_env=()
  local spec
  for spec in ${RIG_SPEED_BRAID:-}; do
    [[ $spec =~ ^braid-[a-z0-9-]+:[A-Z_0-9]+= ]] || { say "RIG_SPEED_BRAID: '$spec' is not braid-NAME:VAR=value,..."; continue; }
    variants+=("${spec%%:*}")
    variant_env[${spec%%:*}]=${spec#*:}
  done
  for ((p = 0; p < ${RIG_SPEED_PAIRS:-2}; p++)); do
    for c in ${RIG_SPEED_COLLS:-all_gather all_reduce reduce_scatter}; do
      for how in "${variants[@]}"; do
        local -a mode=() env=()
        case $how in plain-r1) mode=(-R 1) ;; plain-ce) mode=(-R 2 -x 2) ;; esac
        local kv
        local settings=${variant_env[$how]:-}
        for kv in ${settings//,/ }; do env+=("${kv%%=*}" "${kv#*=}"); done
        launch "${how%%-*}" "$n" ${env[@]+"${env[@]}"}
        run "$OUT/speed/${how}_mpi$n-p${p}_${c}.log" 90 "${L[@]}" "$nt/${c}_perf" "${sizes[@]}" ${mode[@]+"${mode[@]}"}
      done
    done
  done
  rank_wrap=("${saved_wrap[@]}")
  python3 "$root/bench/rig/busbw_table.py" "$OUT/speed" > "$OUT/speed_table.txt"
  cat "$OUT/speed_table.txt" >> "$rig_summary"
}

# Real GPUs, one per rank (no rig wrapper: a machine with N GPUs or more), in nccl-tests' launch
# modes: -t N -g 1 (one process, a thread per GPU: its default), -g N (one thread driving all GPUs
# through groups; braid with BRAID_SPLIT_GROUPS=auto, its default, and =1), one process per GPU (MPI, as torchrun
# does), -t N -p 1, -G 1, and -d all -o all at a size below and one above braid's split threshold.
# -c 1, 1K to RIG_GPUS_MAX (1G), plain NCCL beside braid for nccl-tests' busbw;
# bench/rig/busbw_table.py prints them side by side with the ratios (logs in $OUT/gpus/).
suite_gpus() {
  # -T 40: a braid rank waits BRAID_TIMEOUT (30 s) for a peer before it fails; a run that hangs
  # is killed at 75 s, so a broken mode costs the budget little.
  local n=$1 c have sizes=(-b 1K -e "${RIG_GPUS_MAX:-1G}" -f 4 -n 5 -w 2 -c 1 -T 40)
  have=$(gpus_here)
  if ((have < n)); then say "SKIPPED gpus $n: $have GPUs here"; return 0; fi
  local -a saved_wrap=("${rank_wrap[@]}"); rank_wrap=()
  # gpus_run VARIANT MODE COLL PROCS [VAR VALUE]... -- nccl-tests flags
  gpus_run() {
    local variant=$1 mode=$2 coll=$3 procs=$4; shift 4
    local env=()
    while (($#)) && [[ $1 != -- ]]; do env+=("$1"); shift; done
    shift
    launch "${variant%%-*}" "$procs" ${env[@]+"${env[@]}"}
    run "$OUT/gpus/${variant}_${mode}_${coll}.log" 75 "${L[@]}" "$nt/${coll}_perf" "$@"
  }
  # First the two modes that failed before the ranks agreed on making braid's path: all_reduce with
  # a thread per GPU and with a process per GPU.
  gpus_run plain t$n all_reduce 1 -- "${sizes[@]}" -t "$n" -g 1
  gpus_run braid t$n all_reduce 1 -- "${sizes[@]}" -t "$n" -g 1
  gpus_run plain mpi all_reduce "$n" -- "${sizes[@]}"
  gpus_run braid mpi all_reduce "$n" -- "${sizes[@]}"
  for c in all_gather reduce_scatter broadcast; do
    [[ $c == all_gather ]] && gpus_run plain t$n $c 1 -- "${sizes[@]}" -t "$n" -g 1
    gpus_run braid t$n $c 1 -- "${sizes[@]}" -t "$n" -g 1
  done
  for c in all_gather reduce_scatter alltoall; do
    gpus_run plain mpi $c "$n" -- "${sizes[@]}"
    gpus_run braid mpi $c "$n" -- "${sizes[@]}"
  done
  # braid's routed exchange for every ncclAlltoAll (mode 2: also when no relay pays), its INFO
  # line per routed call the proof that it ran.
  gpus_run braid-route mpi alltoall "$n" BRAID_ROUTE_EXCHANGES 2 BRAID_DEBUG INFO NCCL_CUMEM_ENABLE 0 -- "${sizes[@]}"
  gpus_run plain-nocumem mpi alltoall "$n" NCCL_CUMEM_ENABLE 0 -- "${sizes[@]}"
  gpus_run braid t$n-p1 all_reduce 1 -- "${sizes[@]}" -t "$n" -g 1 -p 1
  gpus_run braid mpi-graph all_reduce "$n" -- "${sizes[@]}" -G 1
  # Every type and operator with braid's PCIe share in every split call (RIG_CHECK_SHARE): the
  # balancer alone would give it nothing in these few calls.
  for c in all_reduce all_gather reduce_scatter; do
    gpus_run braid mpi-dall $c "$n" ${checked_share[@]+"${checked_share[@]}"} -- -d all -o all -b 4M -e 256M -f 64 \
      -n 1 -w 0 -c 1 -T 40
  done
  for c in broadcast reduce sendrecv; do
    gpus_run plain mpi $c "$n" -- "${sizes[@]}"
    gpus_run braid mpi $c "$n" -- "${sizes[@]}"
  done
  # One thread driving every GPU through groups last: "braid" is BRAID_SPLIT_GROUPS=auto (its
  # default: AllReduce and AllGather from 256 MiB), "braid-groups" holds every splittable call.
  for c in all_reduce all_gather reduce_scatter; do
    gpus_run plain g$n $c 1 -- "${sizes[@]}" -g "$n"
    gpus_run braid g$n $c 1 -- "${sizes[@]}" -g "$n"
    gpus_run braid-groups g$n $c 1 BRAID_SPLIT_GROUPS 1 -- "${sizes[@]}" -g "$n"
  done
  rank_wrap=("${saved_wrap[@]}")
  python3 "$root/bench/rig/busbw_table.py" "$OUT/gpus" > "$OUT/busbw_table.txt"
  cat "$OUT/busbw_table.txt" >> "$rig_summary"
}

# braid's own NVLink path forced, against NCCL (see the header).
suite_nvlink() {
  local n=$1 c sizes
  read -r -a sizes <<< "${RIG_NVLINK_SIZES:--b 16M -e 1G -f 4}"
  if (($(gpus_here) < n)); then say "SKIPPED nvlink $n: fewer GPUs"; return 0; fi
  local -a saved_wrap=("${rank_wrap[@]}"); rank_wrap=()
  for c in all_gather all_reduce; do
    launch plain "$n"
    run "$OUT/nvlink/plain_mpi_${c}.log" 90 "${L[@]}" "$nt/${c}_perf" "${sizes[@]}" -n 20 -w 5 -c 1 -T 40
    launch braid "$n" BRAID_NVLINK_PATH copy
    run "$OUT/nvlink/braid_mpi_${c}.log" 90 "${L[@]}" "$nt/${c}_perf" "${sizes[@]}" -n 20 -w 5 -c 1 -T 40
  done
  launch plain "$n"
  run "$OUT/nvlink/plain_graph_all_gather.log" 90 "${L[@]}" "$nt/all_gather_perf" "${sizes[@]}" -n 20 -w 5 -c 1 -G 5 -T 40
  launch braid "$n" BRAID_NVLINK_PATH copy
  run "$OUT/nvlink/braid_graph_all_gather.log" 90 "${L[@]}" "$nt/all_gather_perf" "${sizes[@]}" -n 20 -w 5 -c 1 -G 5 -T 40
  rank_wrap=("${saved_wrap[@]}")
  python3 "$root/bench/rig/busbw_table.py" "$OUT/nvlink" | tee -a "$rig_summary"
}

# Calls captured in CUDA graphs on braid's NVLink path (see the header).
suite_graph() {
  local n=$1 c how
  local env=(BRAID_NVLINK_PATH copy BRAID_PEER_SAME_GPU 1 BRAID_NVLINK_COPY_MIN_BYTES 1048576 BRAID_NVLINK_ALLREDUCE_MIN_BYTES 1048576 NCCL_CUMEM_ENABLE 0 BRAID_NVLINK_GRAPH_MIN_BYTES 1048576)
  local -a saved_wrap=("${rank_wrap[@]}")
  if (($(gpus_here) >= n)); then rank_wrap=(); say "graph $n: one GPU per rank"; fi
  launch braid "$n" "${env[@]}" BRAID_DEBUG INFO BRAID_DEBUG_SUBSYS COLL,INIT
  run "$OUT/graph/braid_n${n}_all_reduce.log" 180 "${L[@]}" "$nt/all_reduce_perf" -d all -o all -b 1M -e 64M -f 64 -n 2 -w 1 -c 1 -G 3 -T 40
  run "$OUT/graph/braid_n${n}_all_gather.log" 150 "${L[@]}" "$nt/all_gather_perf" -d all -b 1M -e 256M -f 16 -n 2 -w 1 -c 1 -G 3 -T 40
  launch braid "$n" "${env[@]}" NCCL_CUMEM_ENABLE 1 BRAID_DEBUG INFO BRAID_DEBUG_SUBSYS COLL,INIT
  run "$OUT/graph/braid_n${n}_all_reduce_cumem.log" 120 "${L[@]}" "$nt/all_reduce_perf" -b 1M -e 256M -f 4 -n 5 -w 1 -c 3 -G 5 -T 40
  # Default settings: what a user of graphs gets, against NCCL's own (with a GPU per rank only:
  # on the rig braid's default settings leave the NVLink path off).
  ((${#rank_wrap[@]} == 0)) && for c in all_gather all_reduce; do
    for how in plain braid; do
      launch "$how" "$n"
      run "$OUT/graph/${how}_default-n${n}_${c}.log" 120 "${L[@]}" "$nt/${c}_perf" -b 1M -e 1G -f 4 -n 10 -w 2 -c 1 -G 5 -T 40
    done
  done
  rank_wrap=("${saved_wrap[@]}")
  grep -l "captured in CUDA graphs ride braid's NVLink path" "$OUT"/graph/braid_*.log 2>/dev/null |
    sed "s|^|graph $n: captured calls rode braid's NVLink path in |" | tee -a "$rig_summary"
  python3 "$root/bench/rig/busbw_table.py" "$OUT/graph" | tee "$OUT/graph/busbw_table.txt" >> "$rig_summary"
}

# braid's NVLink copy-engine path on the rig (see the header): the ranks' buffers shared by CUDA
# IPC on the one GPU, the per-call meeting on braid's progress thread.
suite_copy() {
  local n=$1 c how round have
  local env=(BRAID_NVLINK_PATH copy BRAID_PEER_SAME_GPU 1 BRAID_NVLINK_COPY_MIN_BYTES 1048576 BRAID_NVLINK_ALLREDUCE_MIN_BYTES 1048576 NCCL_CUMEM_ENABLE 0)
  # With a GPU per rank here, the ranks run on real GPUs (no rig wrapper): the path between GPUs.
  local -a saved_wrap=("${rank_wrap[@]}")
  have=$(gpus_here)
  if ((have >= n)); then rank_wrap=(); say "copy $n: one GPU per rank ($have GPUs here)"; fi
  # Exact: every type and operator where the copy engines carry all_reduce (1 MB and 64 MB), and
  # all_gather's every type; each split call's BALANCE line names its NVLink path. RIG_COPY_CHECKS=0
  # leaves the checked runs out (host time only).
  if [[ ${RIG_COPY_CHECKS:-1} != 0 ]]; then
    launch braid "$n" "${env[@]}" BRAID_DEBUG INFO BRAID_DEBUG_SUBSYS BALANCE,INIT
    run "$OUT/copy/braid_n${n}_all_reduce.log" 150 "${L[@]}" "$nt/all_reduce_perf" -d all -o all -b 1M -e 64M -f 64 -n 1 -w 0 -c 1 -T 40
    run "$OUT/copy/braid_n${n}_all_gather.log" 120 "${L[@]}" "$nt/all_gather_perf" -d all -b 1M -e 256M -f 16 -n 1 -w 0 -c 1 -T 40
    # nccl-tests' cuMem allocations, which CUDA IPC cannot export: shared by their fds (each new
    # allocation mapped before its first call), or, where they cannot be, NCCL carries the share.
    launch braid "$n" "${env[@]}" NCCL_CUMEM_ENABLE 1 BRAID_SPLIT_SETTLE_LAG 4 BRAID_DEBUG INFO BRAID_DEBUG_SUBSYS BALANCE,INIT
    run "$OUT/copy/braid_n${n}_all_reduce_cumem.log" 120 "${L[@]}" "$nt/all_reduce_perf" -b 1M -e 256M -f 4 -n 5 -w 1 -c 1 -T 40
    # The copy engines beside a PCIe share in the same calls (RIG_CHECK_SHARE, static balancer).
    if ((${#checked_share[@]})); then
      launch braid "$n" "${env[@]}" "${checked_share[@]}" BRAID_DEBUG INFO BRAID_DEBUG_SUBSYS BALANCE,INIT
      run "$OUT/copy/braid_n${n}_all_reduce_pcie.log" 150 "${L[@]}" "$nt/all_reduce_perf" -d all -o all -b 1M -e 64M -f 64 -n 1 -w 0 -c 1 -T 40
      run "$OUT/copy/braid_n${n}_all_gather_pcie.log" 120 "${L[@]}" "$nt/all_gather_perf" -d all -b 1M -e 256M -f 16 -n 1 -w 0 -c 1 -T 40
      for c in all_reduce all_gather; do
        grep -hE "nvlink \(braid\) [1-9][0-9]* \+ pcie [1-9]" "$OUT/copy/braid_n${n}_${c}_pcie.log" 2>/dev/null | wc -l |
          awk -v n="$n" '{print int($1 / n)}' |  # every rank logs each call
          sed "s|^|copy $n $c: split calls with both a copy-engine and a PCIe share: |" | tee -a "$rig_summary"
      done
    fi
  fi
  # Host time per call (-C 1) with the copy engines' share: plain and braid alternating.
  for ((round = 1; round <= ${RIG_HOSTTIME_ROUNDS:-3}; round++)); do
    for how in plain braid; do
      launch "$how" "$n" "${env[@]}" BRAID_DEBUG INFO BRAID_DEBUG_SUBSYS INIT
      run "$OUT/copy/hosttime/${how}_n${n}_r${round}.log" 120 "${L[@]}" "$nt/all_reduce_perf" -C 1 -b 4K -e 256M -f 4 \
        -n 30 -w 5 -c 0
    done
  done
  # Each call timed alone (host_time_probe), both collectives, one run per size of
  # RIG_COPY_PROBE_SIZES (a log each, numbered like rounds), with braid's caller profile: where the
  # calling thread's time goes at that size (exporting, the meetings, mapping, queueing).
  local pre size k
  for c in all_reduce all_gather; do
    [[ $c == all_reduce ]] && pre= || pre=${c}_
    k=0
    for size in ${RIG_COPY_PROBE_SIZES:-1M 16M 64M 256M}; do
      k=$((k + 1))
      for how in plain braid; do
        launch "$how" "$n" "${env[@]}" BRAID_CALLER_PROFILE 1 BRAID_DEBUG INFO BRAID_DEBUG_SUBSYS INIT
        rm -f "$OUT/copy/hosttime/probe.id"
        run "$OUT/copy/hosttime/probe_${pre}${how}_n${n}_r${k}.log" 120 "${L[@]}" "$root/gpubundle/host_time_probe" \
          --id-file "$OUT/copy/hosttime/probe.id" --coll "$c" -b "$size" -e "$size" -n 30 -w 5
      done
      grep -h "caller us p50" "$OUT/copy/hosttime/probe_${pre}braid_n${n}_r${k}.log" 2>/dev/null |
        sed -E 's/.*: ([0-9]+ split calls handed on)/\1/' | sed "s|^|copy $n $c $size, caller profile: |" | tee -a "$rig_summary"
    done
  done
  rm -f "$OUT/copy/hosttime/probe.id"
  for c in all_reduce all_gather; do
    grep -h "nvlink (" "$OUT/copy/braid_n${n}_${c}.log" 2>/dev/null | sed -E 's/.*nvlink \(([^)]*)\).*/\1/' | sort | uniq -c |
      sed "s|^|copy $n $c: split calls by NVLink path: |" | tee -a "$rig_summary"
  done
  grep -h "caller [0-9.]* us" "$OUT/copy/braid_n${n}_all_reduce.log" 2>/dev/null |
    sed -E 's/.*caller ([0-9.]+) us.*/\1/' | sort -n | awk '{a[NR]=$1} END {if (NR) printf "copy %s all_reduce: caller time per split call, median %s us, max %s us (%d calls)\n", "'"$n"'", a[int((NR+1)/2)], a[NR], NR}' |
    tee -a "$rig_summary"
  rank_wrap=("${saved_wrap[@]}")
}

# The routed exchange (see the header): each binary plain and through braid with routing on.
# -w 0 -n 2: nccl-tests' warm-up walks every size in steps of 2; a row is 6 calls. The ranks log
# at INFO so that every routed call leaves its line (a few hundred lines a log).
suite_route() {
  local n=$1 c how route_sizes=${RIG_ROUTE_SIZES:--b 1K -e 256M -f 4} binaries
  # RIG_ROUTE_COLLS narrows the collectives (braid routes alltoall, gather and scatter, and
  # sendrecv, hypercube and alltoallv through their groups of ncclSend/ncclRecv).
  read -r -a binaries <<< "${RIG_ROUTE_COLLS:-alltoall sendrecv scatter gather hypercube}"
  [[ -z ${RIG_ROUTE_COLLS:-} && -x $nt/alltoallv_perf ]] && binaries+=(alltoallv)
  # nccl-tests (2.19+) allocates with ncclMemAlloc, which makes cuMem allocations when NCCL uses
  # cuMem; braid shares buffers through CUDA IPC, which cannot export those (docs/ROUTING.md), so
  # NCCL_CUMEM_ENABLE=0 (plain and braid alike) gives nccl-tests cudaMalloc'd buffers.
  for c in "${binaries[@]}"; do
    for how in plain braid; do
      launch "$how" "$n" BRAID_ROUTE_EXCHANGES "${RIG_ROUTE_MODE:-2}" BRAID_PEER_SAME_GPU 1 BRAID_DEBUG INFO \
        BRAID_ROUTE_TOPOLOGY "$root/bench/rig/route-mesh4.json" NCCL_CUMEM_ENABLE "${RIG_ROUTE_CUMEM:-0}"
      # shellcheck disable=SC2086  # nccl-tests' size flags, split on purpose
      run "$OUT/route/${how}_n${n}_${c}.log" "${RIG_ROUTE_LIMIT:-90}" "${L[@]}" "$nt/${c}_perf" $route_sizes -n 2 -w 0 -c 1 -T 40
    done
  done
  # A rank dies under routed all-to-alls (64 MB per rank, after 20 calls): the survivors must see
  # an error (ncclCommGetAsyncError or the next call) and abort within the bound, plain and braid.
  local d
  for how in plain braid; do
    [[ ${RIG_ROUTE_DYING:-1} == 1 ]] || break
    d=$(mktemp -d /tmp/rig-dying.XXXXXX)
    launch "$how" "$n" BRAID_ROUTE_EXCHANGES "${RIG_ROUTE_MODE:-2}" BRAID_PEER_SAME_GPU 1 \
      BRAID_ROUTE_TOPOLOGY "$root/bench/rig/route-mesh4.json"
    run "$OUT/route/dying/${how}_n${n}.log" 120 "${L[@]}" "$rig/dying_rank" --id-file "$d/id" --bytes 64M \
      --calls 20 --collective alltoall --error-timeout "${RIG_ERROR_TIMEOUT:-45}" --abort-timeout 10 --abort-bound 2.0
    rm -rf "$d"
  done
  python3 "$root/bench/rig/route_table.py" "$OUT/route" | tee "$OUT/route_table.txt" | tee -a "$rig_summary"
}

args=("$@")
[[ ${#args[@]} -eq 1 && ${args[0]} == all ]] && args=(correctness 2 dying 2 hosttime 2 fuzz correctness 4 dying 4)
((${#args[@]})) || { echo "usage: bash bench/rig/run.sh SUITE [N] ... (see the header)"; exit 2; }
[[ ${RIG_PREFLIGHT:-1} == 1 ]] && { say "== preflight"; suite_preflight; }
i=0
while ((i < ${#args[@]})); do
  s=${args[i]}; i=$((i + 1))
  n=2
  if [[ $s != fuzz && ${args[i]:-} =~ ^[0-9]+$ ]]; then n=${args[i]}; i=$((i + 1)); fi
  say "== $s$([[ $s == fuzz ]] || echo " $n") ($((budget - SECONDS))s of the budget left)"
  case $s in
    correctness) suite_correctness "$n" ;;
    dying) suite_dying "$n" ;;
    fuzz) suite_fuzz ;;
    faults) suite_faults "$n" ;;
    hosttime) suite_hosttime "$n" ;;
    modes) suite_modes "$n" ;;
    net) suite_net "$n" ;;
    compete) suite_compete "$n" ;;
    gpus) suite_gpus "$n" ;;
    speed) suite_speed "$n" ;;
    route) suite_route "$n" ;;
    copy) suite_copy "$n" ;;
    graph) suite_graph "$n" ;;
    nvlink) suite_nvlink "$n" ;;
    mixed) suite_mixed "$n" ;;
    shm) suite_shm "$n" ;;
    *) say "unknown suite $s" ;;
  esac
done

echo
python3 "$root/bench/rig/summarize.py" "$OUT" | tee -a "$rig_summary"
rc=${PIPESTATUS[0]}
if [[ ${RIG_PACK:-1} == 1 ]]; then
  dirs=$(cd "$OUT" && ls -d preflight correctness dying faults fuzz hosttime modes net compete gpus speed route copy graph nvlink shm 2>/dev/null)
  if [[ -n $dirs ]]; then
    # shellcheck disable=SC2086  # folder names, no spaces
    tar -C "$OUT" -czf "$OUT/rig-logs.tar.gz" environment.txt $dirs && (cd "$OUT" && rm -rf $dirs environment.txt)
  fi
fi
exit "$rc"
