set -u
export NCCL_NVLS_ENABLE=0
nccl=$(dirname "$(find / -name 'libnccl.so.2' -not -path '/proc/*' 2>/dev/null | grep -v gpubundle | head -1)")
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:$nccl
for ch in 1 2 4 8; do for pl in device host; do echo "## chunks=$ch placement=$pl"; BRAID_CHUNKS=$ch BRAID_REDUCE_PLACEMENT=$pl timeout 60 gpubundle/braid-bench -C all_reduce -b 256M -e 1G -f 4 -n 5 -w 2 --paths braid | grep -E "^ +[0-9]"; done; done
