# nvidia-h100-x1, carry .rig gpubundle; braid at e16e157
RIG_PREFLIGHT=0 RIG_BUDGET=570 RIG_NET_VARIANTS="plain-socket braid-net-2nic" RIG_NET_COLLS="broadcast reduce alltoall gather scatter hypercube" bash bench/rig/run.sh faults 4 net 2
