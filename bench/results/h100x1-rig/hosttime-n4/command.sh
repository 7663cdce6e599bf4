#!/usr/bin/env bash
# The same machine, warm, right after ../graph-modes-faults-n4: host time per call at 4 ranks, 3 rounds.
OUT=${OUT:-/tmp/out} RIG_BUDGET=370 SUITES="hosttime 4" bash "$(dirname "$0")/../graph-modes-faults-n4/command.sh"
