#!/usr/bin/env bash
# Runs one rank of a job whose ranks all share GPU 0, each posing as its own host to NCCL, so that
# N processes run a multi-rank NCCL job on a machine with one GPU (NCCL refuses two ranks on one GPU
# of one host). NCCL then talks over sockets; braid's own paths run between the processes.
# The project's copy of ../shared/tools/one-gpu-ranks.sh, same behaviour. Wrap the rank's command:
#   mpiexec -n 4 bench/rig/one-gpu-rank.sh all_reduce_perf -c 1 ...
#   torchrun --nproc_per_node=2 --no-python bench/rig/one-gpu-rank.sh python3 train.py
r=${PMI_RANK:-${OMPI_COMM_WORLD_RANK:-${RANK:-0}}}
export NCCL_HOSTID=one-gpu-rank-$r   # NCCL's host identity, per process
export NCCL_TESTS_DEVICE=0           # nccl-tests: every process on GPU 0
export LOCAL_RANK=0                  # scripts that pick cuda:LOCAL_RANK get GPU 0
exec "$@"
