"""`braid run [--debug LEVEL] [--trace FILE] [--compare] -- COMMAND...`: any command (torchrun,
python, an nccl-tests binary) with the drop-in libbraid.so preloaded in front of the real NCCL."""

import os
import subprocess
import sys
import time

from braid import tools


def preload_env(library: str, environ=None, debug=None, trace=None) -> dict:
    """The environment a preloaded run gets: libbraid.so first in LD_PRELOAD (what was there
    stays, after it), braid's log level and the split trace as asked."""
    env = dict(os.environ if environ is None else environ)
    rest = [p for p in env.get("LD_PRELOAD", "").replace(" ", ":").split(":") if p and p != library]
    env["LD_PRELOAD"] = ":".join([library] + rest)
    if debug:
        env["BRAID_DEBUG"] = debug
    if trace:
        env["BRAID_SPLIT_TRACE"] = os.path.abspath(trace)
    return env


def plain_env(library: str, environ=None) -> dict:
    """The environment of the comparison run: the same, without braid in LD_PRELOAD."""
    env = dict(os.environ if environ is None else environ)
    rest = [p for p in env.get("LD_PRELOAD", "").replace(" ", ":").split(":")
            if p and os.path.basename(p) != os.path.basename(library)]
    if rest:
        env["LD_PRELOAD"] = ":".join(rest)
    else:
        env.pop("LD_PRELOAD", None)
    return env


def _timed(command, env):
    start = time.monotonic()
    try:
        code = subprocess.call(command, env=env)
    except FileNotFoundError:
        print(f"braid run: no such command: {command[0]}", file=sys.stderr)
        return 127, 0.0
    return code, time.monotonic() - start


def main(args) -> int:
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        print("braid run: give the command after --, e.g. braid run -- torchrun --nproc-per-node 2 train.py",
              file=sys.stderr)
        return 2
    library = args.library or tools.library_path()
    if args.trace and os.path.exists(args.trace):
        os.remove(args.trace)  # the trace of this run only
    braid_env = preload_env(library, debug=args.debug, trace=args.trace)
    if not args.compare:
        print(f"braid run: LD_PRELOAD={braid_env['LD_PRELOAD']}", file=sys.stderr, flush=True)
        code, _ = _timed(command, braid_env)
        if args.trace:
            _report_trace(args.trace)
        return code
    # Plain first, so braid's run does not warm caches for NCCL alone's.
    print("braid run --compare: 1/2 without braid", file=sys.stderr, flush=True)
    plain_code, plain_seconds = _timed(command, plain_env(library))
    print(f"braid run --compare: 2/2 with braid (LD_PRELOAD={braid_env['LD_PRELOAD']})", file=sys.stderr, flush=True)
    braid_code, braid_seconds = _timed(command, braid_env)
    print(f"braid run --compare: wall time without braid {plain_seconds:.3f} s (exit {plain_code}), "
          f"with braid {braid_seconds:.3f} s (exit {braid_code})"
          + (f", braid/plain {braid_seconds / plain_seconds:.3f}" if plain_seconds > 0 else ""))
    if args.trace:
        _report_trace(args.trace)
    return plain_code or braid_code


def _report_trace(path: str):
    if os.path.exists(path):
        with open(path) as f:
            calls = sum(1 for line in f if line.strip())
        print(f"braid run: {calls} split calls traced in {path} (plot them: braid trace {path})", file=sys.stderr)
    else:
        print(f"braid run: no call was split, so {path} was not written (braid doctor says when braid splits)",
              file=sys.stderr)


def add_parser(sub):
    p = sub.add_parser("run", help="run a command with libbraid.so preloaded",
                       description=__doc__)
    p.add_argument("--debug", metavar="LEVEL", help="braid's log level: VERSION, WARN, INFO or TRACE (BRAID_DEBUG)")
    p.add_argument("--trace", metavar="FILE",
                   help="write every split call (shares, each path's time, the next share) as JSON lines "
                        "(BRAID_SPLIT_TRACE); plot with braid trace FILE")
    p.add_argument("--compare", action="store_true", help="also run the command without braid first; print both wall times")
    p.add_argument("--library", help="a libbraid.so other than this package's")
    p.add_argument("command", nargs="*", help="the command, after --")
    p.set_defaults(func=lambda args, extra: main_with_extra(args, extra))
    return p


def main_with_extra(args, extra):
    args.command = list(args.command) + list(extra)
    return main(args)
