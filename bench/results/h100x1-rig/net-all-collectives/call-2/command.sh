# nvidia-h100-x1, carry .rig gpubundle; braid at e16e157 (BRAID_NET_THREADS default 2)
RIG_PREFLIGHT=0 RIG_BUDGET=570 RIG_NET_VARIANTS="plain-socket braid-net-2nic" RIG_NET_COLLS="all_reduce all_gather reduce_scatter sendrecv broadcast reduce alltoall gather scatter hypercube" bash bench/rig/run.sh net 4 compete 2
