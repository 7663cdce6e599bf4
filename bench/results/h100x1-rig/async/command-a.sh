#!/usr/bin/env bash
# The asynchronous split call (BRAID_ASYNC=1, now the default) on the one-GPU rig: per-call host
# costs of the CUDA calls a split call makes, host time against NCCL (alternating rounds), dying
# ranks, the argument fuzz and the 4-rank correctness matrix. From the repo root, carry .rig and gpubundle.
set -u
cd "$(dirname "$0")/../../../.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
timeout 60 gpubundle/host_cost_probe 20000 > "$OUT/host_cost_probe.txt" 2>&1; cat "$OUT/host_cost_probe.txt"
FUZZ_BIN=gpubundle/shim_argument_fuzz_gpu RIG_PREFLIGHT=0 RIG_BUDGET=480 \
  bash bench/rig/run.sh hosttime 2 hosttime 4 dying 2 dying 4 fuzz correctness 4 > "$OUT/rig-console.txt" 2>&1; tail -80 "$OUT/rig-console.txt"
