#!/usr/bin/env bash
# Installs the Debian packages braid's build and tests need, only those missing. ./run.sh,
# ./test.sh and .ci/run call it first. As root it runs apt-get; as anyone else it prints the one
# apt-get line to run and exits 1. (Python's pytest and matplotlib come from PyPI instead, into a
# virtual environment: tools/python_env.sh; python3-venv is what makes that environment.)
set -euo pipefail
packages=(cmake ninja-build g++ pkg-config python3 python3-venv libgtest-dev libgmock-dev libbenchmark-dev
          libhwy-dev nlohmann-json3-dev libcli11-dev libnuma-dev libhwloc-dev libglpk-dev)
if ! command -v dpkg >/dev/null 2>&1; then
  echo "braid: not a Debian-like system; install the equivalents of: ${packages[*]}" >&2
  exit 0
fi
missing=()
for p in "${packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "braid: missing Debian packages; run: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "braid: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${missing[@]}" >/dev/null
