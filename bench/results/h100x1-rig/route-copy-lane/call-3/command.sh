# nvidia-h100-x1, carry .rig gpubundle; braid at a6c9efa (faults: h2d with host reductions;
# copy and reduce with device reductions came after this call, for 4 ranks)
RIG_PREFLIGHT=0 RIG_BUDGET=560 bash bench/rig/run.sh faults 2 copy 4 faults 4
