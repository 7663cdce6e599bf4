#!/usr/bin/env bash
# Builds the GPU binaries here (the GPU machine has no package registry for braid's build
# dependencies) and gathers them, with the shared libraries they need, in gpubundle/, which the
# device tool carries. Then on the GPU machine: bash bench/gpu_check.sh (which also builds the
# bundle itself where the build can run there).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build-gpu braid-bench braid-plan reduce_bench api_collectives_threads_test api_collectives_processes_test api_usage_test \
  braid shim_multipath_gpu_test shim_group_gpu_test shim_pcie_engine_gpu_test shim_argument_fuzz_gpu shim_mixed_buffers_gpu nvlink_probe copy_engine_probe peer_allreduce_probe stream_wait_probe host_cost_probe host_time_probe host_block_probe graph_cost_probe cuda_peer_reduce_gpu_test nccl-net-braid net_bench peer_allocation_share_gpu_test
rm -rf gpubundle && mkdir -p gpubundle/lib
cp build-gpu/tools/braid-bench/braid-bench build-gpu/tools/braid-plan/braid-plan build-gpu/bench/reduce_bench build-gpu/tests/api/api_*_test \
  build-gpu/tests/shim/shim_multipath_gpu_test build-gpu/tests/shim/shim_group_gpu_test build-gpu/tests/shim/shim_pcie_engine_gpu_test build-gpu/tests/shim/shim_argument_fuzz_gpu build-gpu/tests/shim/shim_mixed_buffers_gpu build-gpu/bench/nvlink_probe build-gpu/bench/copy_engine_probe build-gpu/bench/peer_allreduce_probe build-gpu/bench/stream_wait_probe build-gpu/bench/host_cost_probe build-gpu/bench/host_time_probe build-gpu/bench/host_block_probe build-gpu/bench/graph_cost_probe build-gpu/tests/cuda/cuda_peer_reduce_gpu_test build-gpu/tests/peer/peer_allocation_share_gpu_test gpubundle/
cp build-gpu/src/shim/libbraid.so gpubundle/lib/
# braid's NCCL net plugin (NCCL_NET_PLUGIN=braid finds it as libnccl-net-braid.so on the library path).
cp build-gpu/src/net/libnccl-net-braid.so gpubundle/lib/
# Its transport against a plain socket loop: NET_BENCH=gpubundle/net_bench bench/net/emulated_nics.sh.
cp build-gpu/bench/net_bench gpubundle/
strip gpubundle/net_bench gpubundle/braid-bench gpubundle/braid-plan gpubundle/reduce_bench gpubundle/api_* gpubundle/shim_* gpubundle/lib/libbraid.so gpubundle/lib/libnccl-net-braid.so
for lib in libnuma.so.1 libhwy.so.1 libbenchmark.so.1debian; do cp -L "/usr/lib/x86_64-linux-gnu/$lib" gpubundle/lib/; done
# iproute2 (ip, tc) for kernel-shaped emulated NICs (veth pairs in namespaces, tc tbf): the GPU
# machine has network namespaces but no ip or tc. Wrappers in nettools/bin find their libraries.
mkdir -p gpubundle/nettools/bin gpubundle/nettools/libexec gpubundle/nettools/lib
for tool in "$(command -v ip)" "$(command -v tc)"; do
  [[ -x $tool ]] || continue
  cp "$tool" gpubundle/nettools/libexec/
  name=$(basename "$tool")
  printf '#!/bin/sh\nhere=$(dirname "$(readlink -f "$0")")/..\nLD_LIBRARY_PATH=$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec "$here/libexec/%s" "$@"\n' "$name" \
    > "gpubundle/nettools/bin/$name"
  chmod +x "gpubundle/nettools/bin/$name"
  for lib in $(ldd "$tool" | awk '/=>/ {print $3}'); do
    case $(basename "$lib") in libc.so.*|libm.so.*|ld-linux*) ;; *) cp -L "$lib" gpubundle/nettools/lib/ ;; esac
  done
done
du -sh gpubundle
