#!/usr/bin/env bash
# Pools call-2's and call-3's host-time rounds (the same code, two H100 machines) into one
# comparison: summarize.py takes the median over all of them per size. Prints what pooled.txt holds.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
mkdir -p "$t/c2" "$t/c3a" "$t/c3b" "$t/all/hosttime"
tar xzf "$here/call-2/rig-logs.tar.gz" -C "$t/c2"
tar xzf "$here/call-3/n2-rig-logs.tar.gz" -C "$t/c3a"
tar xzf "$here/call-3/n4-rig-logs.tar.gz" -C "$t/c3b"
for f in "$t"/c2/hosttime/*.log; do cp "$f" "$t/all/hosttime/$(basename "$f" .log | sed 's/_r/_r1/').log"; done
for f in "$t"/c3a/hosttime/*.log "$t"/c3b/hosttime/*.log; do cp "$f" "$t/all/hosttime/$(basename "$f" .log | sed 's/_r/_r2/').log"; done
python3 "$here/../../../rig/summarize.py" "$t/all" | sed -n '/== host time per call/,$p'
