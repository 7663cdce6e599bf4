# Sourced by the GPU scripts: never NVLink multicast (the host's GPUs are shared), braid's carried
# libraries and the machine's own NCCL on the library path, output under $OUT.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
nccl=$(dirname "$(find / -name 'libnccl.so.2' -not -path '/proc/*' 2>/dev/null | grep -v gpubundle | head -1)")
export LD_LIBRARY_PATH=$PWD/gpubundle/lib:$nccl:${LD_LIBRARY_PATH:-}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
G=gpubundle
