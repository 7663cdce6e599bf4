#!/usr/bin/env bash
# The main job in one command: installs the Debian packages the build lacks (tools/install_deps.sh),
# builds only what the job runs, and runs `braid bench`: braid against NCCL on this machine's GPUs
# (braid-bench and libbraid.so), or without a GPU the simulator on a bundled topology (braid-sim).
set -euo pipefail
cd "$(dirname "$0")"
if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  cat <<'USAGE'
usage: ./run.sh [BRAID BENCH ARGUMENTS...]

Installs what the build lacks (as root; otherwise prints the apt-get line), builds the main job's
targets only (braid-bench and libbraid.so with a GPU, braid-sim without) in $BRAID_BUILD_DIR
(default build/), and runs `braid bench` with the arguments given. Without a GPU it runs the
simulator on the topology $BRAID_SIM_TOPO (default h200x2). Extra CMake settings: $BRAID_CMAKE_ARGS.

USAGE
  exec env PYTHONPATH=python python3 -m braid bench --help
fi
tools/install_deps.sh
build=${BRAID_BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo ${BRAID_CMAKE_ARGS:-} >/dev/null
gpu=0
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  if cmake --build "$build" --target help | grep -q '^braid-bench:'; then
    gpu=1
  else
    echo "braid: a GPU is here but braid-bench was not configured (it needs the CUDA toolkit, nccl.h and libnccl); running the simulator."
  fi
fi
if [ $gpu = 1 ]; then
  cmake --build "$build" -j "$(nproc)" --target braid-bench braid
else
  cmake --build "$build" -j "$(nproc)" --target braid-sim
fi
export BRAID_BUILD_DIR="$build"
# braid bench plots with matplotlib: from PyPI into $build/python-venv if the system lacks it.
python=$(tools/python_env.sh "$build")
if [ $gpu = 1 ]; then
  exec env PYTHONPATH=python "$python" -m braid bench "$@"
fi
echo "braid: no GPU found on this machine; running the simulator instead (its predictions for 2, 4 and 8 H200s beside what was measured; another machine: BRAID_SIM_TOPO=name)."
exec env PYTHONPATH=python "$python" -m braid bench --sim --topo "${BRAID_SIM_TOPO:-h200x2}" "$@"
