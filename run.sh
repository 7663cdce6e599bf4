#!/usr/bin/env bash
# Builds braid and runs the main job: braid against NCCL on this machine's GPUs (braid-bench).
# Without a GPU it says so and runs the simulator (the cost model over generated programs) on a
# bundled topology instead (`braid bench --sim`). Extra arguments go to `braid bench`; it prints
# where its results.json and PNG are.
set -euo pipefail
cd "$(dirname "$0")"
build=${BRAID_BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo ${BRAID_CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j "$(nproc)"
export BRAID_BUILD_DIR="$build"
# braid bench plots with matplotlib: from PyPI into $build/python-venv if the system lacks it.
python=$(tools/python_env.sh "$build")
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && [ -x "$build/tools/braid-bench/braid-bench" ]; then
  exec env PYTHONPATH=python "$python" -m braid bench "$@"
fi
echo "braid: no GPU found on this machine; running the simulator on the bundled topology ${BRAID_SIM_TOPO:-h200x2} instead."
exec env PYTHONPATH=python "$python" -m braid bench --sim --topo "${BRAID_SIM_TOPO:-h200x2}" "$@"
