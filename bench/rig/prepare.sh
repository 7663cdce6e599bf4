#!/usr/bin/env bash
# Prepares the one-GPU rig HERE (the CPU machine; the GPU machine has no package registry and no
# MPI): packs into the git-ignored .rig/rig.tar.xz what bench/rig/run.sh needs there, small enough
# to be carried (the device tool carries 64 MiB in all, braid's gpubundle/ included; unpacked the
# rig is 70 MB, packed 5, since nccl-tests' binaries are mostly alike kernels):
#   mpich/            the parts of the MPICH 5.0.2 wheel that mpiexec and libmpi need
#   nccl-tests-mpi/   NVIDIA's nccl-tests (unmodified copy of ../shared/tools/nccl-tests), built one
#                     process per rank (MPI) for sm_90 with the static CUDA runtime, stripped
#   dying_rank        bench/rig/dying_rank.cpp (static CUDA runtime; links libnccl.so.2)
# Each needs only libc and the GPU machine's libnccl.so.2 beside what the pack holds.
# Downloads, intermediates and the unpacked rig (build-rig/stage) stay in build-rig/, not carried.
# Usage, from anywhere:  bench/rig/prepare.sh      (then see bench/rig/README.md)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
shared=${RIG_SHARED_TOOLS:-$root/../shared/tools}
[[ -d $shared/nccl-tests ]] || shared=/work/shared/tools
work=$root/build-rig
rig=$work/stage
mkdir -p "$work"

# 1. MPICH from its wheel (13 MB): pip downloads it, nothing is installed.
shopt -s nullglob
whls=("$work"/mpich-5.0.2-*.whl)
if ((${#whls[@]} == 0)); then
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 -d "$work" mpich==5.0.2
  whls=("$work"/mpich-5.0.2-*.whl)
fi
whl=${whls[0]}
rm -rf "$work/mpich-wheel" && python3 -m zipfile -e "$whl" "$work/mpich-wheel"
mpi_full=$work/mpich-wheel/mpich-5.0.2.data/data      # headers too: the build needs them
chmod +x "$mpi_full"/bin/*

# 2. nccl-tests, one process per rank, built against this machine's NCCL 2.28 for the H100 (sm_90).
# (a rerun recompiles only if the shared copy changed, and relinks always: the link flags may have)
if ! diff -rq "$shared/nccl-tests" "$work/nccl-tests" >/dev/null 2>&1; then
  rm -rf "$work/nccl-tests" "$work/nccl-tests-build" && cp -r "$shared/nccl-tests" "$work/nccl-tests"
fi
rm -f "$work"/nccl-tests-build/*_perf
# The shared script links -lnccl; this machine keeps libnccl.so beside CUDA, outside ld's default path.
nccl_lib=$(dirname "$(ldconfig -p | awk '/libnccl\.so\.2 /{print $NF; exit}')")
export LIBRARY_PATH=$nccl_lib${LIBRARY_PATH:+:$LIBRARY_PATH}
echo "building nccl-tests (MPI) against $nccl_lib/libnccl.so.2: a few minutes on 2 cores"
# The static CUDA runtime: the GPU machine's libcudart.so.13 need not be on its library path.
CUDARTLIB=cudart_static MPI_HOME=$mpi_full NVCC_GENCODE=-gencode=arch=compute_90,code=sm_90 \
  bash "$shared/build-nccl-tests.sh" "$work/nccl-tests" "$work/nccl-tests-build" >/dev/null

# 3. The dying-rank program: static CUDA runtime, so that it needs only libnccl.so.2 beside libc.
cuda=${CUDA_HOME:-/usr/local/cuda}
for nccl_inc in /usr/include /usr/local/include "$cuda/include"; do [[ -f $nccl_inc/nccl.h ]] && break; done
mkdir -p "$work/bin"
g++ -std=c++20 -O2 -Wall -Wextra -o "$work/bin/dying_rank" bench/rig/dying_rank.cpp \
  -I"$nccl_inc" -I"$cuda/include" -L"$nccl_lib" -lnccl -L"$cuda/lib64" -lcudart_static -ldl -lrt -lpthread

# 4. Gather what the GPU machine needs, and nothing else.
rm -rf "$rig" && mkdir -p "$rig/mpich/bin" "$rig/mpich/lib/mpich" "$rig/nccl-tests-mpi"
cp "$mpi_full/bin/mpiexec.hydra" "$rig/mpich/bin/mpiexec"
cp "$mpi_full/bin/hydra_pmi_proxy" "$rig/mpich/bin/"
cp "$mpi_full/lib/libmpi.so.12" "$rig/mpich/lib/"
cp "$mpi_full"/lib/mpich/*.so.* "$rig/mpich/lib/mpich/"          # libfabric and UCX: libmpi needs them
cp "$mpi_full/../../mpich-5.0.2.dist-info/licenses/LICENSE" "$rig/mpich/LICENSE"
cp "$work"/nccl-tests-build/*_perf "$rig/nccl-tests-mpi/"
cp "$work/nccl-tests/LICENSE.txt" "$rig/nccl-tests-mpi/"
cp "$work/bin/dying_rank" "$rig/"
strip "$rig"/nccl-tests-mpi/*_perf "$rig/dying_rank"
chmod +x "$rig"/mpich/bin/* "$rig"/nccl-tests-mpi/*_perf "$rig/dying_rank"

# 5. Checks: every binary finds its libraries (libmpi from .rig, libnccl from the system), and
# mpiexec starts processes. MPICH's own libraries must come before the system's (an older
# libfabric in the GPU machine's image breaks MPICH).
export LD_LIBRARY_PATH=$rig/mpich/lib/mpich:$rig/mpich/lib:$nccl_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
missing=0
for b in "$rig"/nccl-tests-mpi/*_perf "$rig/dying_rank" "$rig/mpich/bin/mpiexec" "$rig/mpich/lib/libmpi.so.12"; do
  if ldd "$b" | grep -q "not found"; then echo "MISSING libraries for $b:"; ldd "$b" | grep "not found"; missing=1; fi
done
[[ $missing == 0 ]] || exit 1
ldd "$rig/nccl-tests-mpi/all_reduce_perf" | grep -E "libmpi|libnccl|libcudart"
ldd "$rig/dying_rank" | grep -E "libnccl|libcudart" || true
"$rig/mpich/bin/mpiexec" -n 2 hostname
du -sh "$rig"

# 6. The pack that travels: .rig/rig.tar.xz (run.sh unpacks it to /tmp/rig on the GPU machine).
rm -rf "$root/.rig" && mkdir -p "$root/.rig"
tar -C "$rig" -cf - . | xz -T"$(nproc)" -9 > "$root/.rig/rig.tar.xz"
{
  echo "# bench/rig/prepare.sh, $(date -u +%FT%TZ), braid $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  echo "# nccl-tests built against $(grep -m1 -o 'NCCL_VERSION_CODE [0-9]*' "$nccl_inc/nccl.h"), sm_90, MPICH 5.0.2"
  (cd "$rig" && find . -type f -printf '%10s %p\n' | sort -k2)
} > "$root/.rig/MANIFEST"
du -sh "$root/.rig"
