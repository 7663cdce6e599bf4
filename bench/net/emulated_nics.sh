#!/usr/bin/env bash
# Emulated NICs the kernel shapes: two network namespaces (two "hosts") joined by NICS veth pairs,
# each side of each pair rate-limited by tc's token bucket filter (tbf). Then net_bench runs a
# plain socket loop and braid's transport over the very same NICs, alternating (docs/NET.md).
# Needs root and a kernel with veth and sch_tbf (netem, for delay, is optional and skipped when
# missing). Probes first and says what the machine refuses. Usage (from the repository root):
#   sudo bench/net/emulated_nics.sh [NICS=2] [RATE=1gbit] [BYTES=256M] [REPEAT=3]
# net_bench from build/bench/net_bench (NET_BENCH to override). COMPETE=1 adds rounds with a
# competing flow (a plain socket loop of 4x the bytes) on the first NIC pair during each transfer:
# the plain loop, pinned to that NIC as NCCL's socket transport is, shares it; braid's may use the
# others.
set -u
nics=${1:-2} rate=${2:-1gbit} bytes=${3:-256M} repeat=${4:-3}
bench=${NET_BENCH:-build/bench/net_bench}
a=braidnetA$$ b=braidnetB$$
# The GPU machine has no iproute2: gpubundle carries ip and tc (bench/make_gpubundle.sh).
command -v ip >/dev/null || [[ ! -d gpubundle/nettools/bin ]] || export PATH=$PWD/gpubundle/nettools/bin:$PATH

probe() {  # each capability on its own, in a throw-away namespace
  unshare -n true 2>/dev/null && echo "netns: yes" || { echo "netns: refused (unshare -n)"; return 1; }
  unshare -n bash -c 'ip link add p0 type veth peer name p1' 2>/dev/null && echo "veth: yes" || { echo "veth: refused"; return 1; }
  unshare -n bash -c 'ip link add p0 type veth peer name p1 && tc qdisc add dev p0 root tbf rate 100mbit burst 64kb latency 50ms' \
    2>/dev/null && echo "tc tbf: yes" || { echo "tc tbf: refused"; return 1; }
  unshare -n bash -c 'ip link add p0 type veth peer name p1 && tc qdisc add dev p0 root netem delay 1ms' 2>/dev/null \
    && echo "tc netem: yes" || echo "tc netem: no (no sch_netem in this kernel: no delay emulation)"
  return 0
}

cleanup() { ip netns del "$a" 2>/dev/null; ip netns del "$b" 2>/dev/null; }
trap cleanup EXIT

echo "== probe"
probe || { echo "this machine does not allow shaped emulated NICs; use loopback addresses and BRAID_NET_RATE_MBPS"; exit 3; }
[[ -x $bench ]] || { echo "no $bench: cmake --build build --target net_bench"; exit 2; }

ip netns add "$a" && ip netns add "$b" || exit 3
ip -n "$a" link set lo up
ip -n "$b" link set lo up
a_list="" b_list=""
for ((i = 0; i < nics; i++)); do
  ip link add "va$i" netns "$a" type veth peer name "vb$i" netns "$b"
  ip -n "$a" addr add "10.77.$i.1/24" dev "va$i"
  ip -n "$b" addr add "10.77.$i.2/24" dev "vb$i"
  for side in "$a va$i" "$b vb$i"; do
    set -- $side
    ip -n "$1" link set "$2" up
    # tbf: the NIC's rate; burst of 1 ms at that rate (at least 64 KB), 20 ms of queue.
    tc -n "$1" qdisc add dev "$2" root tbf rate "$rate" burst 256kb latency 20ms
  done
  a_list+="${a_list:+,}10.77.$i.1"
  b_list+="${b_list:+,}10.77.$i.2"
done
echo "== $nics NICs of $rate each way: host A $a_list, host B $b_list"

# one RECV_NICS SEND_NICS TRANSPORT [ARGS...]: one transfer, receiver in B, sender in A.
one() {
  local rn=$1 sn=$2 tr=$3; shift 3
  local hf=/tmp/braid-net-handle.$$
  rm -f "$hf"
  ip netns exec "$b" "$bench" recv --transport "$tr" --nics "$rn" --handle-file "$hf" --bytes "$bytes" "$@" &
  local rp=$!
  ip netns exec "$a" "$bench" send --transport "$tr" --nics "$sn" --handle-file "$hf" --bytes "$bytes" "$@" > /dev/null
  wait "$rp"
  rm -f "$hf"
}

# competing: a plain loop on the first NIC pair, started before and outlasting the transfer.
competitor_start() {
  local hf=/tmp/braid-net-compete.$$
  rm -f "$hf"
  local big=$(( $(numfmt --from=iec "$bytes") * 4 ))
  ip netns exec "$b" "$bench" recv --transport plain --nics "${b_list%%,*}" --handle-file "$hf" --bytes "$big" > /dev/null &
  comp_recv=$!
  ip netns exec "$a" "$bench" send --transport plain --nics "${a_list%%,*}" --handle-file "$hf" --bytes "$big" > /dev/null &
  comp_send=$!
  sleep 0.5
}
competitor_stop() {
  kill "$comp_send" "$comp_recv" 2>/dev/null
  wait "$comp_send" "$comp_recv" 2>/dev/null
  rm -f /tmp/braid-net-compete.$$
}

for ((r = 1; r <= repeat; r++)); do
  echo "-- round $r"
  one "${b_list%%,*}" "${a_list%%,*}" plain
  one "${b_list%%,*}" "${a_list%%,*}" braid --streams 1
  one "${b_list%%,*}" "${a_list%%,*}" braid --streams 2
  one "$b_list" "$a_list" braid --streams 2
done

if [[ ${COMPETE:-0} == 1 ]]; then
  for ((r = 1; r <= repeat; r++)); do
    echo "-- round $r with a competing flow on ${a_list%%,*} -> ${b_list%%,*}"
    competitor_start
    one "${b_list%%,*}" "${a_list%%,*}" plain
    competitor_stop
    competitor_start
    one "$b_list" "$a_list" braid --streams 2
    competitor_stop
  done
fi
