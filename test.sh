#!/usr/bin/env bash
# Installs the Debian packages the build lacks (tools/install_deps.sh), builds braid and runs its
# tests. Without a GPU (or without nvcc) the GPU-labelled tests are skipped, as in CI; on the GPU
# machine every test runs.
set -euo pipefail
cd "$(dirname "$0")"
tools/install_deps.sh
build=${BRAID_BUILD_DIR:-build}
jobs=$(nproc)

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo ${BRAID_CMAKE_ARGS:-} >/dev/null
# Only what the tests run (braid_tests, CMakeLists.txt): without the CUDA driver that leaves out the
# GPU tests, braid-bench and bench/'s probes. ccache, when installed, keeps a rebuild short.
cmake --build "$build" -j "$jobs" --target braid_tests

# The Python package's tests (pytest; fast, no GPU), against this checkout's python/ and build.
python=$(tools/python_env.sh "$build")
BRAID_BUILD_DIR="$(cd "$build" && pwd)" PYTHONPATH=python "$python" -m pytest -q -p no:cacheprovider python/tests
# The one-GPU rig's log reader (bench/rig/summarize.py), on synthetic nccl-tests output.
python3 bench/rig/test_summarize.py 2>&1 | tail -1
python3 bench/rig/test_net_table.py 2>&1 | tail -1
python3 bench/rig/test_compete_table.py 2>&1 | tail -1
python3 bench/rig/test_busbw_table.py 2>&1 | tail -1
python3 bench/rig/test_route_table.py 2>&1 | tail -1
# The MoE benchmark's token routing and comparison (bench/moe/), without torch.
python3 bench/moe/test_moe.py 2>&1 | tail -1

labels=(-LE gpu)
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 \
   && grep -q '^BRAID_HAVE_CUDA:INTERNAL=1' "$build/CMakeCache.txt" 2>/dev/null; then
  labels=()
fi
ctest --test-dir "$build" --output-on-failure -j "$jobs" "${labels[@]}"
