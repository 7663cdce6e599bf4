"""`braid doctor`: what braid sees on this machine and what it will do there.

The machine comes from braid's own discovery (braid-plan --show-topology: sysfs and NVML, the code
the drop-in runs), the settings and braid's own reading of each value set from the library's settings
layer (braid-plan --show-settings: no second parser here), /dev/shm against what braid's set-up
allocates there and the braid files in it (braid-plan --show-shm), the PCIe
ceiling from braid-bench --ceiling-only, the real NCCL as the drop-in finds it (nccl.py). When
braid will split comes from the library's own rules (braid-plan --show-split-policy:
multipath/paths_admitted.cpp and OrchestratorOptions), the calls it always leaves to NCCL from
multipath/admission.cpp's reasons (ALWAYS_TO_NCCL below; docs/MULTIPATH.md).
"""

import dataclasses
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from typing import List, Optional

from braid import tools
from braid.nccl import find_real_nccl, library_dir_env
from braid.sizes import format_size

# The collectives braid splits, by the library's names (braid-plan's JSON), as nccl-tests names them.
COLLECTIVE_NAMES = {"allreduce": "all_reduce", "allgather": "all_gather", "reducescatter": "reduce_scatter",
                    "broadcast": "broadcast", "reduce": "reduce"}
# Why a call of a splittable collective and size still goes to NCCL alone (multipath::admit's
# reasons, src/multipath/admission.cpp).
ALWAYS_TO_NCCL = [
    "inside an NCCL group (ncclGroupStart/End): NCCL launches at the outermost ncclGroupEnd; "
    "BRAID_SPLIT_GROUPS (auto: AllReduce/AllGather groups from 256 MiB, two ranks) holds such groups back and "
    "splits them after its end",
    "captured in a CUDA graph, unless braid's NVLink path carries it whole (all_reduce/all_gather "
    "from BRAID_NVLINK_GRAPH_MIN_BYTES): a replay cannot repeat braid's host-driven PCIe share",
    "on a non-blocking communicator, one with an asynchronous error, or one with a single rank",
    "buffers CUDA does not map for devices (pinned host memory or another GPU's is staged through device "
    "memory and split, except in a CUDA graph)",
    "FP8 reductions on GPUs below sm90, and PreMulSum operators (each rank may bring its own scalar)",
]


def _run_json(argv, env=None, timeout=120):
    out = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({out.returncode}): {out.stderr.strip()[:300]}")
    return json.loads(out.stdout)


def settings_table(environ=None) -> List[dict]:
    """Every setting, with the library's own reading of each variable set in `environ` (default:
    this process's environment), and rows of type Unknown for BRAID_* names braid does not know."""
    return _run_json([tools.tool("braid-plan"), "--show-settings"], env=environ)


def shm_report() -> dict:
    return _run_json([tools.tool("braid-plan"), "--show-shm"])


def discovered_topology() -> dict:
    return _run_json([tools.tool("braid-plan"), "--show-topology"])


def _setting(table: List[dict], name: str) -> str:
    """The value braid uses, as the library reads it: the one set where braid accepts it, else (unset,
    or refused) the default."""
    for row in table:
        if row["name"] != name:
            continue
        if "parsed" in row:
            return row["parsed"]
        return row["default"].split("|")[0] if row["type"] == "Choice" else row["default"]
    raise KeyError(name)


def _truthy(text: str) -> bool:
    return text.strip().lower() in ("1", "true", "yes", "on")


@dataclasses.dataclass
class SplitRule:
    collective: str
    pcie_from: Optional[int]   # bytes from which braid's PCIe path takes a share; None: never
    nvlink_path_from: Optional[int]  # from which braid's own NVLink path carries it; None: NCCL's kernels
    why_not: str = ""          # when neither applies


def _split_policy_json(nvlink: bool, ranks: int, environ=None) -> dict:
    return _run_json([tools.tool("braid-plan"), "--show-split-policy", "--ranks", str(max(1, ranks)),
                      "--nvlink", "yes" if nvlink else "no"], env=environ)


def split_policy(nvlink: bool, ranks: int, environ=None, policy: Optional[dict] = None) -> List[SplitRule]:
    """From which size each collective is split, on which paths: the drop-in's own rules and reading
    of the settings in `environ` (default: this process's), through braid-plan --show-split-policy
    (`policy`: its answer, where the caller has it already)."""
    policy = policy or _split_policy_json(nvlink, ranks, environ)
    names = [COLLECTIVE_NAMES[r["collective"]] for r in policy["rules"]]
    if policy["disabled"]:
        return [SplitRule(c, None, None, "BRAID_DISABLE=1: pure pass-through") for c in names]
    why_not = "" if policy["pcie_share"]["admitted"] else policy["pcie_share"]["why"]
    return [SplitRule(c, r["pcie_from"], r["nvlink_path_from"], why_not) for c, r in zip(names, policy["rules"])]


def held_per_communicator(nvlink: bool, ranks: int, environ=None, policy: Optional[dict] = None) -> List[str]:
    """What braid holds per communicator on the paths it admits there, once they carry data: the
    library's own reading (braid-plan --show-split-policy, or `policy`, its answer); the INIT and
    INFO lines say what was made."""
    policy = policy or _split_policy_json(nvlink, ranks, environ)
    if policy["disabled"]:
        return []
    holds, lines = policy["holds"], []
    if policy["copy_engines"]["admitted"]:
        copy = holds["copy_engines"]
        lines.append(f"copy engines: GPU memory up to {format_size(copy['pull_scratch_bytes'])} "
                     f"(BRAID_NVLINK_SCRATCH_BYTES) from the first AllReduce share of {format_size(copy['pull_from_bytes'])} "
                     f"or more it carries, and up to {copy['graphs_max']} CUDA graphs of calls (docs/MULTIPATH.md); no thread")
    if policy["pcie_share"]["admitted"]:
        workers = holds["pcie_share"]["worker_threads"]
        lines.append(f"PCIe share: its pinned staging (shared memory, below), "
                     f"{holds['pcie_share']['progress_threads']} progress thread and "
                     + (f"{workers} worker threads" if workers else "1 to 8 worker threads (BRAID_THREADS=0: from the "
                        "GPU's NUMA node's cores)") + ", from the first call that gives it data")
    if not lines:
        lines.append("nothing: every call goes to NCCL, and braid makes no engine, thread or buffer")
    return lines


def describe_rule(rule: SplitRule) -> str:
    if rule.pcie_from is None and rule.nvlink_path_from is not None:
        return (f"{rule.collective:15s} from {format_size(rule.nvlink_path_from):>5s}: braid's copy-engine path "
                f"alone; no PCIe share: {rule.why_not}")
    if rule.pcie_from is None:
        return f"{rule.collective:15s} never split: {rule.why_not}"
    text = f"{rule.collective:15s} from {format_size(rule.pcie_from):>5s}: NVLink share"
    text += " on braid's copy-engine path" if rule.nvlink_path_from is not None else " on NCCL's kernels"
    text += " + PCIe share on braid's host-staged path"
    if rule.nvlink_path_from is not None and rule.nvlink_path_from < rule.pcie_from:
        text += f"; from {format_size(rule.nvlink_path_from)} braid's NVLink path alone"
    return text


def _link_source(topology: dict, link: dict) -> str:
    if topology.get("name") != "discovered":
        return f"from {topology.get('name')}'s file (assumed)"
    if link["kind"] == "nvlink":
        return "assumed: NVML's active links x 26.6 GB/s per link"
    if link["kind"] == "pcie":
        return "rated: the PCIe link's speed x width in sysfs (not measured)"
    return "assumed"


def topology_lines(topology: dict) -> List[str]:
    nodes = topology.get("nodes", [])
    gpus = [n for n in nodes if n["kind"] == "gpu"]
    numas = [n for n in nodes if n["kind"] == "numa"]
    lines = [f"NUMA nodes: {len(numas)} (" + ", ".join(f"{n['name']}: {n['cores']} cores" for n in numas) + ")"]
    lines.append(f"GPUs: {len(gpus)}" + ("" if gpus else " (none found by sysfs and NVML)"))
    for g in gpus:
        lines.append(f"  {g['name']}  PCI {g.get('pci_bus_id') or '?'}  on {g.get('numa')}")
    for link in topology.get("links", []):
        lines.append(f"  link {link['a']} <-> {link['b']}: {link['kind']}, {link['gbps_ab']:.1f} / "
                     f"{link['gbps_ba']:.1f} GB/s ({_link_source(topology, link)})")
    return lines


def has_gpu(topology: dict) -> bool:
    if any(n["kind"] == "gpu" for n in topology.get("nodes", [])):
        return True
    smi = shutil.which("nvidia-smi")
    if smi:
        probe = subprocess.run([smi, "-L"], capture_output=True, text=True)
        return probe.returncode == 0 and "GPU" in probe.stdout
    return False


def pytorch_lines() -> List[str]:
    if importlib.util.find_spec("torch") is None:
        return ["PyTorch: not importable from this Python (braid run works with any launcher all the same)"]
    # In a child: importing torch takes seconds and may initialise CUDA.
    probe = ("import json, torch\n"
             "nccl = None\n"
             "try:\n    nccl = '.'.join(map(str, torch.cuda.nccl.version()))\nexcept Exception as e:\n"
             "    nccl = 'none (%s)' % e\n"
             "print(json.dumps({'version': torch.__version__, 'cuda': torch.version.cuda, 'nccl': nccl,"
             " 'file': torch.__file__, 'gpus': torch.cuda.device_count() if torch.cuda.is_available() else 0}))\n")
    try:
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
        info = json.loads(out.stdout.strip().splitlines()[-1])
    except (subprocess.TimeoutExpired, ValueError, IndexError):
        return ["PyTorch: found but its import failed"]
    return [f"PyTorch {info['version']} (CUDA {info['cuda']}, its NCCL {info['nccl']}, "
            f"{info['gpus']} GPUs visible) at {os.path.dirname(info['file'])}"]


def pcie_ceiling(real) -> Optional[dict]:
    """braid-bench --ceiling-only: every GPU copies D2H and H2D at once for a few seconds."""
    try:
        bench = tools.tool("braid-bench")
    except FileNotFoundError:
        return None
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "ceiling.json")
        run = subprocess.run([bench, "--ceiling-only", "-b", "256M", "-e", "256M", "-n", "8", "-J", out],
                             capture_output=True, text=True, env=library_dir_env(real), timeout=120)
        if run.returncode != 0 or not os.path.exists(out):
            return {"error": (run.stderr or run.stdout).strip()[:300]}
        with open(out) as f:
            return json.load(f)


def _attempt(what, fn, fallback):
    """fn(), or `fallback` with the reason printed when braid's tools cannot answer."""
    try:
        return fn()
    except (FileNotFoundError, RuntimeError, ValueError, subprocess.TimeoutExpired) as e:
        print(f"cannot {what}: {e}")
        return fallback


def _ceiling_lines(gpu: bool, measure: bool, real) -> List[str]:
    if not gpu:
        return ["no GPU on this machine: nothing to measure."]
    if not measure:
        return ["skipped (--no-measure)"]
    ceiling = pcie_ceiling(real)
    if ceiling is None:
        return ["braid-bench is not built here (it needs the CUDA toolkit at build time)"]
    if "error" in ceiling:
        return [f"braid-bench failed: {ceiling['error']}"]
    if "ceiling" not in ceiling:
        return ["braid-bench wrote no ceiling (an older braid-bench without --ceiling-only?)"]
    lines = [f"  GPU {g['device']}: D2H {g['d2h']:.1f} GB/s, H2D {g['h2d']:.1f} GB/s"
             for g in ceiling["ceiling"]["per_gpu"]]
    return lines + [f"  ceiling (slowest GPU and direction): {ceiling['ceiling_gbps']:.1f} GB/s"]


def _split_lines(table: List[dict], topology: dict, gpu: bool) -> List[str]:
    lines = []
    ranks = sum(1 for n in topology.get("nodes", []) if n["kind"] == "gpu")
    nvlink = any(link["kind"] == "nvlink" for link in topology.get("links", []))
    if not gpu:
        lines.append("No GPU here, so the drop-in has nothing to split on this machine. What it would do on "
                     "a machine like h200x2 (2 GPUs on NVLink), with these settings:")
        ranks, nvlink = 2, True
    elif ranks == 1:
        lines.append("One GPU: a job of one process per GPU has nothing to split. Several processes sharing "
                     "it (the one-GPU rig, bench/rig/) split as GPUs without NVLink would:")
        ranks, nvlink = 2, False
    policy = _split_policy_json(nvlink, ranks)  # one braid-plan run for the rules and the holdings
    lines += ["  " + describe_rule(rule) for rule in split_policy(nvlink, ranks, policy=policy)]
    lines.append(f"  balancer: {_setting(table, 'BRAID_BALANCER')}; calls return before braid's share ends: "
                 f"{'yes' if _truthy(_setting(table, 'BRAID_ASYNC')) else 'no (BRAID_ASYNC=0)'}")
    lines.append("  held per communicator:")
    lines += ["   - " + held for held in held_per_communicator(nvlink, ranks, policy=policy)]
    lines.append("  every other call goes to NCCL alone, and so do these at any size:")
    for reason in ALWAYS_TO_NCCL:
        if reason.startswith("inside an NCCL group") and _truthy(_setting(table, "BRAID_SPLIT_GROUPS")):
            reason += " (BRAID_SPLIT_GROUPS=1 is set)"
        lines.append("   - " + reason)
    lines.append("  " + exchange_line(table))
    return lines


def exchange_line(table: List[dict]) -> str:
    """What happens to alltoall, gather, scatter and send/recv: not split, but routed where
    BRAID_ROUTE_EXCHANGES asks (src/shim/braid_part.cpp, src/shim/grouped_p2p.cpp; docs/ROUTING.md)."""
    mode = int(_setting(table, "BRAID_ROUTE_EXCHANGES"))
    if mode == 0:
        return ("alltoall, gather, scatter, send/recv: never split; NCCL carries them. BRAID_ROUTE_EXCHANGES=1 "
                "routes them through braid's copy-engine peer copies and 2-hop relays (docs/ROUTING.md)")
    since = format_size(int(_setting(table, "BRAID_ROUTE_MIN_BYTES")))
    return (f"alltoall, gather, scatter, send/recv groups: routed by braid (BRAID_ROUTE_EXCHANGES={mode}) where a "
            f"flow reaches {since} (BRAID_ROUTE_MIN_BYTES)"
            + (" and the router finds a relay pays; else NCCL" if mode == 1 else ", relayed or direct") +
            "; send/recv only where every rank makes the same group (docs/ROUTING.md)")


def settings_lines(table: List[dict]) -> List[str]:
    """Every BRAID_* variable set (the rows with a value), with braid's own reading of it: refused
    values and names braid does not know are marked."""
    set_here = sorted((row for row in table if "value" in row), key=lambda row: row["name"])
    if not set_here:
        return ["none (every setting at its default; docs/SETTINGS.md lists them)"]
    lines = []
    for row in set_here:
        note = ""
        if row["type"] == "Unknown":
            note = f"   UNKNOWN to braid: ignored (did you mean {row['nearest']}?)"
        elif row["type"] == "Tool":
            note = "   (read by braid's tools and Python package)"
        elif row.get("refused"):
            note = f"   REFUSED: {row['reason']}; braid uses the default {row['parsed']}"
        elif row.get("parsed") not in (None, row["value"]):
            note = f"   (braid reads {row['parsed']})"
        lines.append(f"  {row['name']}={row['value']}{note}")
    return lines


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB"


def shm_lines(shm: dict) -> List[str]:
    """/dev/shm against what one communicator's set-up allocates there, and braid's files in it."""
    if not shm.get("known"):
        return [f"{shm.get('dir', '/dev/shm')}: its size cannot be read here"]
    need = shm["need"]
    how = (f"BRAID_STAGING_BYTES={shm['staging_bytes_set']}" if shm["staging_bytes_set"]
           else "1 GiB of staging, the CUDA backend's default")
    lines = [f"{shm['dir']}: size {_mib(shm['size'])}, {_mib(shm['free'])} free",
             f"  braid needs {_mib(need)} per communicator of {shm['ranks']} GPUs (two control segments, and "
             f"{how} x {shm['numa_nodes']} NUMA node(s)), allocated for real when braid's PCIe share first "
             f"carries data; until then the meetings' control segment alone (kilobytes)"]
    if shm["free"] >= need:
        lines.append("  enough")
    else:
        at_least = -(-(shm["size"] - shm["free"] + need) // (1 << 20))
        lines.append(f"  NOT ENOUGH: braid's PCIe share will not start, and its part of each call goes to NCCL "
                     f"(one WARN per rank says so). Give /dev/shm at least {at_least} MiB (docker run --shm-size={at_least}m) "
                     f"or set BRAID_STAGING_BYTES lower (collectives then run in pieces)")
    files = shm.get("files", [])
    stale = [f for f in files if f["stale"]]
    lines.append(f"  braid files there: {len(files)}" + (f", {len(stale)} STALE (the next set-up removes them, "
                                                           "or rm them yourself)" if stale else ""))
    for f in files:
        lines.append(f"   {'STALE ' if f['stale'] else ''}{f['name']} ({_mib(f['bytes'])}): {f['state']}")
    return lines


NO_GPU_TEXT = """There is no GPU on this machine, so braid cannot run collectives here. `braid bench` runs the
simulator instead: braid-sim generates braid's PCIe program for each collective and size on a
bundled topology (braid topo lists them), lets the cost model choose placement and chunks, and
predicts its time beside a host-staged ring (the shape of NCCL's SHM path) on the same model.
Every figure it prints is a prediction, never a measurement."""


def report(measure: bool = True) -> int:
    from braid import __version__
    print(f"braid {__version__} at {tools.PACKAGE} ({'installed package' if tools.installed() else 'source checkout'})")
    library = _attempt("find the drop-in", tools.library_path, None)
    if library:
        print(f"drop-in: {library}   (braid run -- CMD preloads it)")

    print("\n== machine (braid's discovery: sysfs and NVML) ==")
    topology = _attempt("discover", discovered_topology, {"nodes": [], "links": []})
    for line in topology_lines(topology):
        print(line)
    gpu = has_gpu(topology)

    print("\n== NCCL and PyTorch ==")
    real = find_real_nccl()
    print(f"real NCCL: {real.path}, version {real.version_text()}, found via {real.how}" if real.path
          else f"real NCCL: {real.how}")
    for line in pytorch_lines():
        print(line)

    print("\n== PCIe ceiling (all GPUs D2H and H2D at once, measured) ==")
    for line in _ceiling_lines(gpu, measure, real):
        print(line)

    table = _attempt("read braid's settings", settings_table, None)
    if table is None:
        return 1
    print("\n== what braid splits (per communicator; docs/MULTIPATH.md) ==")
    for line in _split_lines(table, topology, gpu):
        print(line)
    print("\n== BRAID_* settings set (braid's own reading of each) ==")
    for line in settings_lines(table):
        print(line)
    print("\n== shared memory ==")
    shm = _attempt("read /dev/shm", shm_report, None)
    for line in shm_lines(shm) if shm else []:
        print(line)
    if not gpu:
        print("\n== no GPU ==")
        print(NO_GPU_TEXT)
    return 0


def add_parser(sub):
    p = sub.add_parser("doctor", help="what braid sees on this machine and what it will do there")
    p.add_argument("--no-measure", action="store_true", help="skip the PCIe ceiling measurement")
    p.set_defaults(func=lambda args, extra: report(measure=not args.no_measure))
    return p

