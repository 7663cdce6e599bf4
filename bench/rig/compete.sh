#!/usr/bin/env bash
# Issue 20's acceptance "under a competing flow on one NIC, braid beats NCCL's socket transport by
# >= 1.3x", with NCCL's own transport measured over the same NICs in the same call (docs/NET.md).
#   bash bench/rig/compete.sh [N=2]        (bench/rig/run.sh compete N calls it; root for netns)
# Each of the N rank processes is a host in its own network namespace, joined to the others by
# COMPETE_NICS (2) NICs: veth pairs into one bridge per NIC (a switch namespace), every port shaped
# by tc tbf to COMPETE_MBIT (2000) Mbit/s each way. Variants, alternating, each without ("quiet")
# and with ("compete") a competing flow on NIC 0 (a plain socket loop, net_bench's, from host 0 to
# host 1, started before and killed after the measurement):
#   plain-socket  NCCL's socket transport, NCCL_NET=Socket NCCL_SOCKET_IFNAME==nic0 (NCCL pins a
#                 GPU to one NIC); "plain": no libbraid.so, as in the net suite
#   braid-net     braid's plugin, NCCL_NET_PLUGIN=braid NCCL_NET=braid BRAID_NET_NICS=nic0,nic1
#   plain-socket-2nic  (opt-in, COMPETE_VARIANTS) NCCL's socket transport on both NICs,
#                 NCCL_SOCKET_IFNAME==nic0,nic1: NCCL spreads its channels over them, blind to load
# COMPETE_WORKLOAD=nccl-tests (default): nccl-tests COMPETE_COLLS (sendrecv all_reduce) from
# COMPETE_MIN to COMPETE_MAX (32M, 128M), -f 4 -n 5 -w 1 -c 1, ranks on GPU 0 as hosts
# (one-gpu-rank.sh), launched by mpiexec with RIG_NT the nccl-tests folder (run.sh sets them).
# COMPETE_WORKLOAD=net_bench: net_bench's plain loop (on nic0) against braid's transport (both
# NICs) in place of nccl-tests, COMPETE_BENCH_BYTES (256M), no GPU: the CPU machine's proof of the
# namespaces, shaping and competing flow. NET_BENCH: net_bench (gpubundle/net_bench, else
# build/bench/net_bench).
# Probes first (netns, veth, bridge, tc tbf, ip netns exec) and says what the machine refuses;
# then, if refused (or if the ranks cannot run in namespaces), falls back to loopback: NCCL on lo
# unshaped, braid on 127.0.0.1,127.0.0.2 shaped in user space (BRAID_NET_RATE_MBPS), the competing
# loop on 127.0.0.1: NOT a fair comparison, and the table says so.
# Logs: $OUT/compete/<variant>_<quiet|compete>_n<N>_<workload>.log (command first, "# nic-bytes"
# per host and NIC from tc's counters, exit last), mode.txt, probe.txt; then compete_table.py.
# Bounded by COMPETE_BUDGET seconds (270) in all, every command by timeout. COMPETE_BRIDGE=0 joins
# 2 hosts by veth pairs directly (what the probe does where bridges are refused); COMPETE_NSENTER=1
# enters namespaces with nsenter (what it does where `ip netns exec` is refused).
set -u
cd "$(dirname "$0")/../.." || exit 2
root=$PWD
self=$root/bench/rig/compete.sh
# The GPU machine has no iproute2: the bundle carries ip and tc (bench/make_gpubundle.sh), as
# wrappers that put their own libraries on LD_LIBRARY_PATH (so ns_run hands on the caller's).
command -v ip >/dev/null || [[ ! -d $root/gpubundle/nettools/bin ]] || export PATH=$root/gpubundle/nettools/bin:$PATH

# ns_run NS CMD...: CMD in network namespace NS ("-": here). `ip netns exec` also remounts /sys
# for the namespace; where that is refused, COMPETE_NSENTER=1 (set by the probe) enters only the
# network namespace.
ns_run() {
  local ns=$1; shift
  if [[ $ns == - ]]; then "$@"
  elif [[ ${COMPETE_NSENTER:-0} == 1 ]]; then nsenter "--net=/run/netns/$ns" -- "$@"
  else ip netns exec "$ns" env "LD_LIBRARY_PATH=${LD_LIBRARY_PATH-}" "$@"; fi
}

# Internal: one net_bench transfer, receiver in RECV_NS, sender in SEND_NS ("-": no namespace).
if [[ ${1:-} == --pair ]]; then
  shift
  rns=$1 sns=$2 bench=$3 hf=$4; shift 4   # then: TRANSPORT RECV_NICS SEND_NICS BYTES [ARGS]
  tr=$1 rn=$2 sn=$3 by=$4; shift 4
  rm -f "$hf"
  ns_run "$rns" "$bench" recv --transport "$tr" --nics "$rn" --handle-file "$hf" --bytes "$by" "$@" &
  rp=$!
  ns_run "$sns" "$bench" send --transport "$tr" --nics "$sn" --handle-file "$hf" --bytes "$by" "$@" > /dev/null
  src=$?
  wait "$rp"
  rrc=$?
  rm -f "$hf"
  exit $((src ? src : rrc))
fi

n=${1:-2}
OUT=${OUT:-/tmp/out}
dir=$OUT/compete
mkdir -p "$dir"
budget=${COMPETE_BUDGET:-270}
mbit=${COMPETE_MBIT:-2000}
nics=${COMPETE_NICS:-2}
workload=${COMPETE_WORKLOAD:-nccl-tests}
read -r -a colls <<< "${COMPETE_COLLS:-sendrecv all_reduce}"
nt=${RIG_NT:-/tmp/rig/nccl-tests-mpi}
bench=${NET_BENCH:-}
bridge=1
if [[ -z $bench ]]; then
  bench=$root/gpubundle/net_bench
  [[ -x $bench ]] || bench=$root/build/bench/net_bench
fi
tag=bc$$
sw=${tag}sw
t_start=$SECONDS
unbuf=(); command -v stdbuf >/dev/null && unbuf=(stdbuf -o0 -e0)

say() { echo "$*" | tee -a "$dir/mode.txt"; }
: > "$dir/mode.txt"

comp_pids=()
competitor_stop() {
  ((${#comp_pids[@]})) || return 0
  kill "${comp_pids[@]}" 2>/dev/null
  wait "${comp_pids[@]}" 2>/dev/null
  comp_pids=()
  rm -f "/tmp/braid-compete-flow.$$"
}
cleanup() {
  competitor_stop
  local r
  for ((r = 0; r < n; r++)); do ip netns del "${tag}h$r" 2>/dev/null; done
  ip netns del "$sw" 2>/dev/null
  ip netns del "${tag}probe" 2>/dev/null
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# What the machine allows, each in a throw-away namespace.
probe() {
  local p=${tag}probe
  command -v ip > /dev/null && command -v tc > /dev/null || { echo "ip/tc: missing (iproute2)"; return 1; }
  ip netns add "$p" 2>/dev/null && echo "netns: yes" || { echo "netns: refused (ip netns add)"; return 1; }
  ip -n "$p" link add p0 type veth peer name p1 2>/dev/null && echo "veth: yes" || { echo "veth: refused"; return 1; }
  bridge=1
  if [[ ${COMPETE_BRIDGE:-1} == 0 ]] || ! { ip -n "$p" link add b0 type bridge 2>/dev/null && ip -n "$p" link set p1 master b0 2>/dev/null; }; then
    bridge=0
    ((n == 2)) || { echo "bridge: refused (needed for more than 2 hosts)"; return 1; }
    echo "bridge: refused (2 hosts: joined by veth pairs directly)"
  else
    echo "bridge: yes"
  fi
  tc -n "$p" qdisc add dev p0 root tbf rate 100mbit burst 64kb latency 20ms 2>/dev/null \
    && echo "tc tbf: yes" || { echo "tc tbf: refused"; return 1; }
  if ip netns exec "$p" true 2>/dev/null; then
    echo "ip netns exec: yes"
  elif nsenter "--net=/run/netns/$p" -- true 2>/dev/null; then
    export COMPETE_NSENTER=1
    echo "ip netns exec: refused; nsenter --net: yes (used instead)"
  else
    echo "ip netns exec: refused, nsenter --net: refused"; return 1
  fi
  ip netns del "$p"
  return 0
}

# N hosts, `nics` NICs each: host r's nicK (10.78.K.r+1/24) is a veth into bridge brK of the switch
# namespace. tbf on both ends: the host's egress is its send rate, the switch port's its receive rate.
# Without bridges (2 hosts only) nicK of host 0 and nicK of host 1 are the two ends of one pair.
build_hosts() {
  local r k h burst=$((mbit * 250 > 262144 ? mbit * 250 : 262144))  # 2 ms at the rate, >= 256 KB
  if ((!bridge)); then
    for ((r = 0; r < 2; r++)); do
      h=${tag}h$r
      ip netns add "$h" && ip -n "$h" link set lo up || return 1
      ns_run "$h" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 2>/dev/null
    done
    for ((k = 0; k < nics; k++)); do
      ip link add "nic$k" netns "${tag}h0" type veth peer name "nic$k" netns "${tag}h1" || return 1
      for ((r = 0; r < 2; r++)); do
        h=${tag}h$r
        ip -n "$h" addr add "10.78.$k.$((r + 1))/24" dev "nic$k" && ip -n "$h" link set "nic$k" up || return 1
        tc -n "$h" qdisc add dev "nic$k" root tbf rate "${mbit}mbit" burst "$burst" latency 20ms || return 1
      done
    done
    return 0
  fi
  ip netns add "$sw" && ip -n "$sw" link set lo up || return 1
  ns_run "$sw" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 2>/dev/null
  for ((k = 0; k < nics; k++)); do
    ip -n "$sw" link add "br$k" type bridge && ip -n "$sw" link set "br$k" up || return 1
  done
  for ((r = 0; r < n; r++)); do
    h=${tag}h$r
    ip netns add "$h" && ip -n "$h" link set lo up || return 1
    # IPv4 only: no link-local IPv6 address for NCCL to pick, no IPv6 chatter in tc's counters.
    ns_run "$h" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 2>/dev/null
    for ((k = 0; k < nics; k++)); do
      ip link add "nic$k" netns "$h" type veth peer name "h${r}n$k" netns "$sw" || return 1
      ip -n "$h" addr add "10.78.$k.$((r + 1))/24" dev "nic$k" || return 1
      ip -n "$h" link set "nic$k" up && ip -n "$sw" link set "h${r}n$k" master "br$k" \
        && ip -n "$sw" link set "h${r}n$k" up || return 1
      tc -n "$h" qdisc add dev "nic$k" root tbf rate "${mbit}mbit" burst "$burst" latency 20ms || return 1
      tc -n "$sw" qdisc add dev "h${r}n$k" root tbf rate "${mbit}mbit" burst "$burst" latency 20ms || return 1
    done
  done
  # Every host reaches every other on every NIC (ARP through the bridges) before anything is timed.
  if command -v ping > /dev/null; then
    for ((k = 0; k < nics; k++)); do
      ns_run "${tag}h0" ping -c 1 -W 2 "10.78.$k.2" > /dev/null || { echo "no ping on nic$k"; return 1; }
    done
  fi
}

# "# nic-bytes HOST NIC BYTES": what each host's NICs have sent (tc's counters), for the deltas.
nic_bytes() {
  local r k
  ((netns)) || return 0
  for ((r = 0; r < n; r++)); do
    for ((k = 0; k < nics; k++)); do
      echo "h$r nic$k $(tc -s -n "${tag}h$r" qdisc show dev "nic$k" | awk '/Sent/{print $2; exit}')"
    done
  done
}

# The competing flow: a plain loop from host 0 to host 1 on NIC 0, running until stopped.
competitor_start() {
  local hf=/tmp/braid-compete-flow.$$ log=$1 rns=- sns=- ra=127.0.0.1 sa=127.0.0.1
  ((netns)) && { rns=${tag}h1 sns=${tag}h0 ra=10.78.0.2 sa=10.78.0.1; }
  rm -f "$hf"
  ns_run "$rns" "$bench" recv --transport plain --nics "$ra" --handle-file "$hf" --bytes 1024G >> "$log" 2>&1 &
  comp_pids=($!)
  ns_run "$sns" "$bench" send --transport plain --nics "$sa" --handle-file "$hf" --bytes 1024G >> "$log" 2>&1 &
  comp_pids+=($!)
  sleep 1
  kill -0 "${comp_pids[@]}" 2>/dev/null || { echo "# competing flow did not start (see $log)"; return 1; }
}

# Ends rank processes a command left behind (NCCL_HOSTID=one-gpu-rank-*), each by its id.
reap() {
  local d pid leftover=()
  for d in /proc/[0-9]*; do
    pid=${d#/proc/}
    grep -qz '^NCCL_HOSTID=one-gpu-rank-' "$d/environ" 2>/dev/null && leftover+=("$pid")
  done
  ((${#leftover[@]})) && { echo "# reaped leftover ranks: ${leftover[*]}" >> "$1"; kill -9 "${leftover[@]}" 2>/dev/null; sleep 1; }
  return 0
}

# measure LOG LIMIT CMD...: bounded by LIMIT and the budget; tc's byte counts before and after.
measure() {
  local log=$1 limit=$2; shift 2
  local left=$((budget - (SECONDS - t_start)))
  if ((left < 25)); then
    { echo "# command: $*"; echo "# SKIPPED: ${left}s of the ${budget}s budget left"; } > "$log"
    echo "SKIPPED (budget)  ${log#"$OUT"/}"
    return 0
  fi
  ((limit > left - 10)) && limit=$((left - 10))
  { echo "# command: $(printf '%q ' "$@")"; echo "# limit: ${limit}s; started $(date -u +%T)"; } > "$log"
  local before t0=$SECONDS rc
  before=$(nic_bytes)
  timeout -k 5 "$limit" "$@" < /dev/null >> "$log" 2>&1
  rc=$?
  join <(echo "$before" | awk '{print $1"/"$2, $3}' | sort) <(nic_bytes | awk '{print $1"/"$2, $3}' | sort) \
    | awk '{split($1, a, "/"); print "# nic-bytes", a[1], a[2], $3 - $2}' >> "$log"
  echo "# exit: $rc after $((SECONDS - t0))s$( ((rc == 124 || rc == 137)) && echo " (TIMEOUT: killed at the ${limit}s limit)")" >> "$log"
  reap "$log"
  printf 'rc=%-3s %4ss  %s\n' "$rc" "$((SECONDS - t0))" "${log#"$OUT"/}"
}

# The command of one variant, in the array C: command_for VARIANT COLL [nccl-tests' size arguments].
command_for() {
  local variant=$1 coll=$2 k all_nics="" lo_nics=127.0.0.1
  shift 2
  local sizes=("$@")
  ((${#sizes[@]})) || sizes=(-b "${COMPETE_MIN:-32M}" -e "${COMPETE_MAX:-128M}" -f 4 -n 5 -w 1)
  for ((k = 0; k < nics; k++)); do all_nics+="${all_nics:+,}nic$k"; done
  for ((k = 1; k < nics; k++)); do lo_nics+=",127.0.0.$((k + 1))"; done
  if [[ $workload == net_bench ]]; then
    local by=${COMPETE_BENCH_BYTES:-256M} hf=/tmp/braid-compete-pair.$$
    if ((netns)); then
      case $variant in
        plain-socket) C=(bash "$self" --pair "${tag}h1" "${tag}h0" "$bench" "$hf" plain nic0 nic0 "$by") ;;
        braid-net) C=(bash "$self" --pair "${tag}h1" "${tag}h0" "$bench" "$hf" braid "$all_nics" "$all_nics" "$by" --streams 2) ;;
      esac
    else
      case $variant in
        plain-socket) C=(bash "$self" --pair - - "$bench" "$hf" plain 127.0.0.1 127.0.0.1 "$by") ;;
        braid-net) C=(bash "$self" --pair - - "$bench" "$hf" braid "$lo_nics" "$lo_nics" "$by" --streams 2
                      --rate-mbps "$((mbit / 8))") ;;
      esac
    fi
    return
  fi
  local env=(NCCL_P2P_DISABLE 1 NCCL_SHM_DISABLE 1 NCCL_DEBUG INFO NCCL_DEBUG_SUBSYS "INIT,NET" NCCL_SOCKET_FAMILY AF_INET)
  local wrap=()
  if ((netns)); then
    # NCCL's bootstrap on nic0 too: each host's lo is its own.
    env+=(NCCL_SOCKET_IFNAME "=nic0" COMPETE_NETNS_PREFIX "${tag}h")
    wrap=("$root/bench/rig/netns-rank.sh")
    case $variant in
      plain-socket) env+=(NCCL_NET Socket) ;;
      plain-socket-2nic) env+=(NCCL_NET Socket NCCL_SOCKET_IFNAME "=$all_nics") ;;
      braid-net) env+=(NCCL_NET_PLUGIN braid NCCL_NET braid BRAID_NET_NICS "$all_nics") ;;
    esac
  else
    env+=(NCCL_SOCKET_IFNAME lo)
    case $variant in
      plain-socket) env+=(NCCL_NET Socket) ;;
      braid-net) env+=(NCCL_NET_PLUGIN braid NCCL_NET braid BRAID_NET_NICS "$lo_nics" BRAID_NET_RATE_MBPS "$((mbit / 8))") ;;
    esac
  fi
  C=(mpiexec -n "$n")
  while ((${#env[@]} >= 2)); do C+=(-genv "${env[0]}" "${env[1]}"); env=("${env[@]:2}"); done
  C+=("${wrap[@]}" "$root/bench/rig/one-gpu-rank.sh" "${unbuf[@]}" "$nt/${coll}_perf"
      "${sizes[@]}" -c 1 -T 60)
}

echo "== probe" > "$dir/probe.txt"
netns=0
if probe >> "$dir/probe.txt" 2>&1; then netns=1; fi
cat "$dir/probe.txt"
[[ -x $bench ]] || { say "no net_bench at $bench (NET_BENCH, or carry gpubundle): no competing flow possible"; exit 2; }
if ((netns)); then
  if build_hosts >> "$dir/probe.txt" 2>&1; then
    say "mode: namespaces: $n hosts, $nics NICs each (nic0..), ${mbit} Mbit/s each way per NIC (tc tbf), $( ((bridge)) && echo "a bridge per NIC" || echo "veth pairs host to host")$( [[ ${COMPETE_NSENTER:-0} == 1 ]] && echo ", nsenter"); fair: both transports cross the same shaped NICs"
  else
    netns=0
    tail -3 "$dir/probe.txt"
    cleanup
  fi
fi
if ((netns)) && [[ $workload == nccl-tests ]]; then
  # Can the ranks run in namespaces at all (MPI's launch, NCCL's bootstrap on nic0)?
  command_for plain-socket all_reduce -b 1K -e 1M -f 32 -n 1 -w 1
  measure "$dir/preflight_n${n}.txt" 60 "${C[@]}"
  if ! grep -q '^# exit: 0 ' "$dir/preflight_n${n}.txt"; then
    say "the ranks could not run in namespaces (see compete/preflight_n${n}.txt): falling back to loopback"
    netns=0
    cleanup
  fi
fi
if ((!netns)); then
  say "mode: loopback: NOT FAIR: NCCL's socket transport on lo unshaped, braid on 127.0.0.x shaped in user space to $((mbit / 8)) MB/s per NIC, the competing loop on 127.0.0.1 (unshaped: it loads the CPU, not a NIC)"
fi

read -r -a variants <<< "${COMPETE_VARIANTS:-plain-socket braid-net}"
if [[ $workload == net_bench ]] || ((!netns)); then
  # A plain loop has one socket, and loopback has one interface: no NCCL over both NICs there.
  read -r -a variants <<< "${variants[*]/plain-socket-2nic/}"
fi
[[ $workload == net_bench ]] && colls=(net_bench)
for coll in "${colls[@]}"; do
  for cond in quiet compete; do
    for variant in "${variants[@]}"; do
      log=$dir/${variant}_${cond}_n${n}_${coll}.log
      if [[ $cond == compete ]]; then
        competitor_start "$dir/competitor.txt" || { echo "# competing flow did not start" > "$log"; continue; }
      fi
      command_for "$variant" "$coll"
      measure "$log" "${COMPETE_LIMIT:-90}" "${C[@]}"
      [[ $cond == compete ]] && competitor_stop
    done
  done
done

python3 "$root/bench/rig/compete_table.py" "$dir" | tee "$OUT/compete_table.txt"
exit "${PIPESTATUS[0]}"
