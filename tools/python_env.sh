#!/usr/bin/env bash
# Prints the Python that ./run.sh and ./test.sh run braid's Python code with: the system's python3
# when it has pytest and matplotlib, else a virtual environment in BUILD/python-venv that gets them
# from PyPI (made once). Usage: python=$(tools/python_env.sh BUILD)
set -euo pipefail
build=${1:?usage: python_env.sh BUILD_DIR}
if python3 -c "import pytest, matplotlib" 2>/dev/null; then
  echo python3
  exit 0
fi
venv=$build/python-venv
if ! "$venv/bin/python" -c "import pytest, matplotlib" 2>/dev/null; then
  python3 -m venv "$venv" >&2
  "$venv/bin/python" -m pip install -q pytest matplotlib numpy >&2
fi
echo "$venv/bin/python"
