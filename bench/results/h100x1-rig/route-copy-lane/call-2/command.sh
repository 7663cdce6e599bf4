# nvidia-h100-x1, carry .rig gpubundle; braid with the copy engines' share on the progress lane,
# the mapping-cache retry, and the faults suite's static share (h2d's host placement came after)
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:$LD_LIBRARY_PATH
RIG_PREFLIGHT=0 RIG_BUDGET=470 RIG_ROUTE_COLLS="gather scatter sendrecv hypercube" RIG_ROUTE_DYING=0 bash bench/rig/run.sh copy 2 faults 2 route 4
export BRAID_TIMEOUT=20
gpubundle/shim_multipath_gpu_test; BRAID_NVLINK_PATH=nccl gpubundle/shim_multipath_gpu_test; gpubundle/shim_group_gpu_test
