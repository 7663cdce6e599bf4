#!/usr/bin/env bash
# After the plugin's request-reuse race fix: braid's net plugin against NCCL's socket transport
# on the one-GPU rig (2 processes as 2 nodes), every variant of `bench/rig/run.sh net 2`; a probe
# of what the GPU machine allows for kernel-shaped emulated NICs (netns, veth, tc tbf); and host
# time per call at 2 ranks with the engine's default worker count against BRAID_THREADS=4 (does
# the worker pool crowd the calling thread at the sizes braid splits?). Carry .rig and gpubundle.
set -u
cd "$(dirname "$0")/../../../.." 2>/dev/null || true
O=${OUT:-/tmp/out}; mkdir -p "$O"
{ echo "uid $(id -u), $(nproc) cores"; command -v ip tc mpiexec
  unshare -n true && echo "netns: yes" || echo "netns: refused"
  unshare -n bash -c 'ip link add p0 type veth peer name p1' && echo "veth: yes" || echo "veth: refused"
  unshare -n bash -c 'ip link add p0 type veth peer name p1 && tc qdisc add dev p0 root tbf rate 100mbit burst 64kb latency 50ms' \
    && echo "tc tbf: yes" || echo "tc tbf: refused"; } > "$O/probe.txt" 2>&1
cat "$O/probe.txt"
mkdir -p "$O/net"
OUT=$O/net RIG_PREFLIGHT=0 RIG_BUDGET=290 bash bench/rig/run.sh net 2 > "$O/net/console.txt" 2>&1 || true
tail -45 "$O/net/net_table.txt" 2>/dev/null; tail -3 "$O/net/summary.txt"
OUT=$O/ht-default RIG_PREFLIGHT=0 RIG_BUDGET=130 bash bench/rig/run.sh hosttime 2 > /dev/null 2>&1
echo "== default workers"; tail -18 "$O/ht-default/summary.txt"
OUT=$O/ht-threads4 BRAID_THREADS=4 RIG_PREFLIGHT=0 RIG_BUDGET=130 bash bench/rig/run.sh hosttime 2 > /dev/null 2>&1
echo "== BRAID_THREADS=4"; tail -18 "$O/ht-threads4/summary.txt"
cd "$O" && tar -czf all.tgz probe.txt net ht-default ht-threads4 && rm -rf net ht-default ht-threads4
