# nvidia-h100-x1, carry .rig gpubundle; braid at 9e6365c (before the fixes this call led to)
RIG_PREFLIGHT=0 RIG_BUDGET=575 RIG_ROUTE_COLLS="alltoall gather scatter alltoallv sendrecv hypercube" bash bench/rig/run.sh route 2 route 4 faults 2
