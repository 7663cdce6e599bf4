"""braid doctor: when braid splits, which settings it flags, and the whole report without a GPU."""

import os
import pathlib
import struct

import pytest

from braid import doctor

MiB = 1 << 20


def clean_environ(**variables):
    """This environment without any BRAID_* variable, with `variables` set (braid-plan is found from
    this process's environment)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRAID_")}
    env.update(variables)
    return env


def braid_environ(**values):
    """This environment without BRAID_* variables, with BRAID_<NAME>=value for each of `values`."""
    return clean_environ(**{"BRAID_" + k.upper(): str(v) for k, v in values.items()})


def with_values(table, **values):
    """The settings table as braid-plan --show-settings prints it with these variables set: the
    library's own reading of each (`table` is the one without them)."""
    return doctor.settings_table(braid_environ(**values))


def rules(environ, nvlink=True, ranks=2):
    return {r.collective: r for r in doctor.split_policy(nvlink, ranks, environ)}


def test_defaults_split_from_128_mib_on_nvlink_and_1_mib_without():
    env = braid_environ()
    on_nvlink = rules(env, nvlink=True)
    assert on_nvlink["all_reduce"].pcie_from == 128 * MiB
    assert on_nvlink["all_reduce"].nvlink_path_from == 128 * MiB  # a threshold of its own
    assert on_nvlink["all_gather"].nvlink_path_from == 16 * MiB
    assert on_nvlink["reduce_scatter"].nvlink_path_from is None  # NCCL's kernels carry its NVLink share
    assert rules(env, nvlink=False)["all_reduce"].pcie_from == 1 * MiB
    assert rules(env, nvlink=False)["all_gather"].nvlink_path_from is None  # auto: only on NVLink


def test_settings_move_the_thresholds_and_paths():
    env = braid_environ(split_min_bytes=64 * MiB, nvlink_path="nccl")
    r = rules(env)["all_gather"]
    assert r.pcie_from == 64 * MiB and r.nvlink_path_from is None
    forced = rules(braid_environ(nvlink_path="copy"), nvlink=False)["all_gather"]
    assert forced.nvlink_path_from == 16 * MiB


def test_own_paths_by_default_on_two_ranks_only():
    env = braid_environ()
    four = rules(env, ranks=4)["all_gather"]
    assert four.nvlink_path_from is None  # NCCL's kernels won at 4
    assert four.pcie_from is None and "more than two ranks on NVLink" in doctor.describe_rule(four)
    assert rules(braid_environ(split_min_bytes=64 * MiB), ranks=4)["all_gather"].pcie_from == 64 * MiB
    assert rules(env, nvlink=False, ranks=4)["all_gather"].pcie_from == 1 * MiB  # HyLink's machines
    forced = rules(braid_environ(nvlink_path="copy"), ranks=4)["all_gather"]
    assert forced.nvlink_path_from == 16 * MiB and forced.pcie_from is None
    assert "copy-engine path alone" in doctor.describe_rule(forced)


def test_disabled_or_single_gpu_never_splits_and_says_why():
    for r in rules(braid_environ(disable=1)).values():
        assert r.pcie_from is None and "BRAID_DISABLE" in doctor.describe_rule(r)
    for r in rules(braid_environ(), ranks=1).values():
        assert r.pcie_from is None and "one rank" in r.why_not


def test_what_a_communicator_holds_follows_the_paths_and_settings():
    two = doctor.held_per_communicator(True, 2, braid_environ(nvlink_scratch_bytes="16M"))
    assert any(line.startswith("copy engines: GPU memory up to 16M") and "32 CUDA graphs" in line for line in two)
    assert any(line.startswith("PCIe share:") and "1 progress thread" in line for line in two)
    no_graphs = doctor.held_per_communicator(True, 2, braid_environ(nvlink_body_graphs=0, threads=3))
    assert any("up to 0 CUDA graphs" in line for line in no_graphs)
    assert any("3 worker threads" in line for line in no_graphs)
    # Four ranks on NVLink: braid admits no path by default, so it holds nothing.
    assert doctor.held_per_communicator(True, 4, braid_environ()) == [
        "nothing: every call goes to NCCL, and braid makes no engine, thread or buffer"]
    assert doctor.held_per_communicator(True, 2, braid_environ(disable=1)) == []


def test_refused_values_fall_back_to_the_default_as_braid_does():
    env = braid_environ(nvlink_path="sideways", split_min_bytes="lots")
    r = rules(env)["all_gather"]
    assert r.pcie_from == 128 * MiB and r.nvlink_path_from == 16 * MiB


def test_settings_lines_flag_unknown_and_refused_variables():
    table = doctor.settings_table(clean_environ(BRAID_BALANCER="fancy", BRAID_TIMEOUT="5", BRAID_TIMEOUTS="5",
                                                PATH="/bin"))
    text = "\n".join(doctor.settings_lines(table))
    assert "BRAID_BALANCER=fancy   REFUSED: not one of hylink, flexlink, static; braid uses the default hylink" in text
    assert "BRAID_TIMEOUT=5\n" in text + "\n"
    assert "BRAID_TIMEOUTS=5   UNKNOWN to braid: ignored (did you mean BRAID_TIMEOUT?)" in text
    assert "PATH" not in text
    assert doctor.settings_lines(doctor.settings_table(clean_environ()))[0].startswith("none")


# Issue 44: doctor listed BRAID_SPLIT_MIN_BYTES=abc, 1M or -5 with no mark (1M is 1 MiB since).
@pytest.mark.parametrize("value", ["abc", "1.5M", "-5", "1e9", "nan"])
def test_values_braid_refuses_are_marked_with_what_it_accepts(value):
    lines = doctor.settings_lines(with_values(None, split_min_bytes=value))
    assert lines == [f"  BRAID_SPLIT_MIN_BYTES={value}   REFUSED: not an integer in [0, 9e+18] (K, M, G, T allowed); braid uses the default 0"]


# Issue 43 row 11: doctor disagreed with the library on 0x10 (16 to braid) and 1e9 (refused by braid).
def test_doctor_reads_values_as_the_library_does():
    assert rules(braid_environ(split_min_bytes="0x10"), nvlink=False)["all_reduce"].pcie_from == 16
    assert rules(braid_environ(split_min_bytes="1e9"), nvlink=False)["all_reduce"].pcie_from == 1 * MiB
    assert "(braid reads 16)" in doctor.settings_lines(with_values(None, split_min_bytes="0x10"))[0]


# Issue 43 row 11: names the package itself reads are no typos.
def test_names_braids_own_tools_read_are_known():
    table = doctor.settings_table(clean_environ(BRAID_SIM_TOPO="h200x2"))
    text = "\n".join(doctor.settings_lines(table))
    assert "UNKNOWN" not in text and "BRAID_SIM_TOPO=h200x2" in text


# Issue 43 row 11 and acceptance: every setting set to each odd value; exit 0, no traceback, and
# every value braid refuses marked.
@pytest.mark.parametrize("value", ["nan", "inf", "-1", "1e308", "0x10", "garbage\u00e9\u2603"])
def test_doctor_never_crashes_and_marks_every_refused_value(run_braid, settings_table, value):
    env = {row["name"]: value for row in settings_table if row["type"] not in ("Tool", "Unknown")}
    env["BRAID_DEBUG_FILE"] = os.devnull  # a value for a file name must still be one
    result = run_braid("doctor", "--no-measure", env=env, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    section = result.stdout.split("== BRAID_* settings set")[1].split("\n== ")[0]
    parsed = {row["name"]: row for row in doctor.settings_table({**os.environ, **env})}
    for name, row in parsed.items():
        if row["type"] in ("Tool", "Unknown") or "value" not in row:
            continue
        line = next(line for line in section.splitlines() if line.startswith(f"  {name}="))
        assert ("REFUSED" in line) == row["refused"], line
        if row["type"] in ("Int", "Double", "Bool", "Choice") and value in ("nan", "inf", "1e308"):
            assert "REFUSED" in line, line


# Issue 44: doctor said "braid has no split for them" and never named BRAID_ROUTE_EXCHANGES.
def test_exchanges_name_the_setting_that_routes_them():
    off = doctor.exchange_line(with_values(None))
    assert "BRAID_ROUTE_EXCHANGES=1 routes them" in off and "no split for them" not in off
    on = doctor.exchange_line(with_values(None, route_exchanges=1))
    assert "routed by braid (BRAID_ROUTE_EXCHANGES=1) where a flow reaches 1M" in on


def test_shm_shortage_says_what_to_do():
    shm = {"dir": "/dev/shm", "known": True, "size": 64 * MiB, "free": 60 * MiB, "need": 1032 * MiB, "ranks": 2,
           "numa_nodes": 1, "staging_bytes_set": 0, "files": []}
    text = "\n".join(doctor.shm_lines(shm))
    assert "/dev/shm: size 64.0 MiB, 60.0 MiB free" in text
    assert "NOT ENOUGH" in text and "--shm-size=1036m" in text and "BRAID_STAGING_BYTES" in text


# Issue 43: braid doctor lists stale braid files. A control segment whose creator has ended, as a
# set-up whose ranks were all killed leaves it (its header: magic, nranks, opened, attached, pid, pid ns).
def test_doctor_lists_stale_braid_files(run_braid):
    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm here")
    dead = os.fork()
    if dead == 0:
        os._exit(0)
    os.waitpid(dead, 0)
    name = "braid-" + os.urandom(16).hex() + "-ctl"
    path = pathlib.Path("/dev/shm") / name
    header = struct.pack("<6Q", 0x6272616964637431, 2, 1, 1, dead, os.stat("/proc/self/ns/pid").st_ino)
    path.write_bytes(header.ljust(4096, b"\0"))
    try:
        out = run_braid("doctor", "--no-measure").stdout
    finally:
        path.unlink(missing_ok=True)
    assert "== shared memory ==" in out
    assert f"STALE {name}" in out and f"creator pid {dead} has ended" in out


def test_report_without_a_gpu_says_so_and_explains_the_simulator(run_braid):
    if doctor.has_gpu(doctor.discovered_topology()):
        import pytest
        pytest.skip("this machine has a GPU")
    out = run_braid("doctor", env={"BRAID_SPLIT_MIN_BYTES": str(256 * MiB)}).stdout
    for section in ("== machine", "== NCCL and PyTorch ==", "== PCIe ceiling", "== what braid splits",
                    "== BRAID_* settings set", "== shared memory ==", "== no GPU =="):
        assert section in out
    assert "no GPU on this machine: nothing to measure." in out
    assert "all_reduce      from  256M" in out
    assert "BRAID_SPLIT_MIN_BYTES=268435456" in out
    assert "== shared memory ==" in out and "braid needs" in out
    assert "Every figure it prints is a prediction" in out


def test_one_gpu_explains_the_rig_and_uses_the_rules_without_nvlink(settings_table):
    one_gpu = {"nodes": [{"kind": "gpu", "name": "gpu0"}, {"kind": "numa", "name": "numa0", "cores": 8}], "links": []}
    text = "\n".join(doctor._split_lines(with_values(settings_table), one_gpu, gpu=True))
    assert "One GPU" in text and "bench/rig/" in text
    assert "all_reduce      from    1M" in text  # HyLink's S_min without NVLink
