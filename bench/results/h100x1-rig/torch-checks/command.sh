#!/usr/bin/env bash
set -u
cd "$(dirname "$0")/../.."
source bench/gpu_env.sh
W=$PWD/bench/rig/one-gpu-rank.sh
mkdir -p $OUT/t
for how in plain braid; do
  pre=""; [ $how = braid ] && pre="LD_PRELOAD=$PWD/gpubundle/lib/libbraid.so"
  timeout 200 env $pre BRAID_DEBUG=WARN python3 -m torch.distributed.run --standalone --nproc_per_node=2 --no-python bash $W python3 bench/checks/torch_collectives.py > $OUT/t/torch_$how.log 2>&1; echo "torch $how rc=$?"
done
grep -hE "^(ok|WRONG)" $OUT/t/torch_plain.log | sed 's/^ok   /ok/' > /tmp/p; grep -hE "^(ok|WRONG)" $OUT/t/torch_braid.log | sed 's/^ok   /ok/' > /tmp/b
echo "checks plain=$(wc -l < /tmp/p) braid=$(wc -l < /tmp/b); lines differing: $(diff /tmp/p /tmp/b | grep -c '^[<>]')"
grep -h world $OUT/t/torch_*.log
