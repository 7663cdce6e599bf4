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


def median(values):
    values = sorted(v for v in values if v is not None)
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2
