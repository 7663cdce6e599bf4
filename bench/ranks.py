"""Launches a PyTorch job of N processes, a GPU each, as torchrun would, plain or with braid's
drop-in preloaded, and collects each rank's JSON line. Shared by bench/process_cost.py and
bench/mixed_collectives.py; no torch here (the children import it).

Every launch is bounded: past `timeout` seconds every rank is killed and the run reported as hung.
"""
import json
import os
import socket
import subprocess
import sys
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(script, child_args, ranks, braid_lib=None, timeout=300, extra_env=None, log_prefix=None):
    """Runs `python3 script --child child_args...` as `ranks` processes. Returns (rows, status):
    rows[rank] is the rank's last JSON line on stdout (None if it gave none); status is "ok",
    "failed" (a rank exited non-zero) or "hung" (killed at the timeout)."""
    if log_prefix:
        os.makedirs(os.path.dirname(log_prefix) or ".", exist_ok=True)
    port = free_port()
    procs = []
    started = time.time()
    for rank in range(ranks):
        env = dict(os.environ)
        env.update({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "RANK": str(rank),
                    "LOCAL_RANK": str(rank), "WORLD_SIZE": str(ranks), "LOCAL_WORLD_SIZE": str(ranks),
                    "NCCL_NVLS_ENABLE": "0"})
        env.pop("LD_PRELOAD", None)
        if braid_lib:
            env["LD_PRELOAD"] = braid_lib
        env.update(extra_env or {})
        err = open(f"{log_prefix}.rank{rank}.log", "w") if log_prefix else subprocess.DEVNULL
        procs.append((subprocess.Popen([sys.executable, script, "--child", "--t0", repr(started)] + list(child_args),
                                       env=env, stdout=subprocess.PIPE, stderr=err, text=True), err))
    status = "ok"
    rows = []
    deadline = started + timeout
    for proc, err in procs:
        try:
            out, _ = proc.communicate(timeout=max(1.0, deadline - time.time()))
        except subprocess.TimeoutExpired:
            status = "hung"
            for p, _ in procs:
                p.kill()
            out, _ = proc.communicate()
        if proc.returncode not in (0, None) and status == "ok":
            status = "failed"
        if err is not subprocess.DEVNULL:
            # NCCL's and braid's logs go to stdout: kept beside the rank's stderr.
            err.write(out or "")
            err.close()
        lines = [line for line in (out or "").splitlines() if line.startswith("{")]
        rows.append(json.loads(lines[-1]) if lines else None)
    return rows, status


def rank_device(rank, world):
    """A child's GPU: its own where the machine has one per rank; else the one-GPU rig's shape,
    ranks sharing GPUs, each posing as its own host to NCCL (which refuses two ranks on one GPU of
    one host). Call before CUDA or NCCL start in the child."""
    import torch
    count = torch.cuda.device_count()
    if count < world:
        os.environ["NCCL_HOSTID"] = f"bench-rank-{rank}"
    return rank % count


def init_rank():
    """A child's start, as under torchrun: its GPU (rank_device), then the NCCL process group on it.
    Returns (rank, world size, torch device)."""
    import torch
    import torch.distributed as dist
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    device = rank_device(rank, world)
    torch.cuda.set_device(device)
    dev = torch.device("cuda", device)
    dist.init_process_group("nccl", device_id=dev)
    return rank, world, dev


def thread_cpu_seconds():
    """This process's CPU seconds (user + system) per thread name, from /proc: who spent the
    machine's cores (NCCL's, braid's and PyTorch's threads are named)."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        out[name] = round(out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / tick, 2)
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def add_job_arguments(parser, timeout):
    """The flags every plain-against-braid job shares (the children's own two hidden)."""
    import argparse
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--t0", type=float, default=0.0, help=argparse.SUPPRESS)
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--braid", default="gpubundle/lib/libbraid.so", help="libbraid.so (default: %(default)s)")
    parser.add_argument("--pairs", type=int, default=2, help="plain/braid pairs, alternating")
    parser.add_argument("--timeout", type=float, default=timeout, help="seconds per launch before its ranks are killed")
    parser.add_argument("--json", help="write the runs and summary here")
    parser.add_argument("--logs", help="folder for each rank's log (stderr and stdout)")


def alternate_pairs(script, name, child_args, args):
    """Runs the job plain and preloaded, alternating, args.pairs times; returns every run."""
    braid = os.path.abspath(args.braid)
    if not os.path.exists(braid):
        sys.exit(f"{name}: {braid} does not exist; build it (bench/make_gpubundle.sh) or pass --braid")
    runs = []
    for pair in range(args.pairs):
        for mode in ("plain", "braid"):
            prefix = os.path.join(args.logs, f"{name}.n{args.ranks}.{mode}.{pair}") if args.logs else None
            rows, status = launch(script, child_args, args.ranks, braid_lib=braid if mode == "braid" else None,
                                  timeout=args.timeout, log_prefix=prefix)
            runs.append({"mode": mode, "pair": pair, "status": status, "ranks": rows})
            print(f"{mode} pair {pair}: {status}; rank 0: {rows[0]}", flush=True)
    return runs


def median(values):
    values = sorted(v for v in values if v is not None)
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2
