#!/usr/bin/env bash
# Runs one rank in its own network namespace, ${COMPETE_NETNS_PREFIX}<rank> (bench/rig/compete.sh
# makes them: one "host" each, its NICs veth pairs): the rank's NCCL then reaches the others only
# through those NICs. Wraps bench/rig/one-gpu-rank.sh:
#   mpiexec -n 2 -genv COMPETE_NETNS_PREFIX bc1h bench/rig/netns-rank.sh bench/rig/one-gpu-rank.sh CMD...
r=${PMI_RANK:-${OMPI_COMM_WORLD_RANK:-${RANK:-0}}}
ns=${COMPETE_NETNS_PREFIX:?COMPETE_NETNS_PREFIX is not set}$r
# COMPETE_NSENTER=1: only the network namespace changes (ip netns exec also remounts /sys).
[[ ${COMPETE_NSENTER:-0} == 1 ]] && exec nsenter "--net=/run/netns/$ns" -- "$@"
# The bundle's ip (gpubundle/nettools) sets LD_LIBRARY_PATH for itself: the rank gets ours back.
exec ip netns exec "$ns" env "LD_LIBRARY_PATH=${LD_LIBRARY_PATH-}" "$@"
