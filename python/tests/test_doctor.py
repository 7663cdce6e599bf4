"""braid doctor: when braid splits, which settings it flags, and the whole report without a GPU."""

from braid import doctor

MiB = 1 << 20


def with_values(table, **values):
    """The settings table as braid-plan --show-settings prints it with these variables set."""
    out = []
    for row in table:
        row = dict(row)
        row.pop("value", None)
        key = row["name"].removeprefix("BRAID_").lower()
        if key in values:
            row["value"] = str(values[key])
        out.append(row)
    return out


def rules(table, nvlink=True, ranks=2):
    return {r.collective: r for r in doctor.split_policy(table, nvlink, ranks)}


def test_defaults_split_from_128_mib_on_nvlink_and_1_mib_without(settings_table):
    table = with_values(settings_table)
    on_nvlink = rules(table, nvlink=True)
    assert on_nvlink["all_reduce"].pcie_from == 128 * MiB
    assert on_nvlink["all_reduce"].nvlink_path_from == 128 * MiB  # a threshold of its own
    assert on_nvlink["all_gather"].nvlink_path_from == 16 * MiB
    assert on_nvlink["reduce_scatter"].nvlink_path_from is None  # NCCL's kernels carry its NVLink share
    assert rules(table, nvlink=False)["all_reduce"].pcie_from == 1 * MiB
    assert rules(table, nvlink=False)["all_gather"].nvlink_path_from is None  # auto: only on NVLink


def test_settings_move_the_thresholds_and_paths(settings_table):
    table = with_values(settings_table, split_min_bytes=64 * MiB, nvlink_path="nccl")
    r = rules(table)["all_gather"]
    assert r.pcie_from == 64 * MiB and r.nvlink_path_from is None
    forced = rules(with_values(settings_table, nvlink_path="copy"), nvlink=False)["all_gather"]
    assert forced.nvlink_path_from == 16 * MiB


def test_own_nvlink_path_by_default_on_two_ranks_only(settings_table):
    table = with_values(settings_table)
    assert rules(table, ranks=4)["all_gather"].nvlink_path_from is None  # NCCL's kernels won at 4
    assert rules(table, ranks=4)["all_gather"].pcie_from == 128 * MiB
    forced = rules(with_values(settings_table, nvlink_path="copy"), ranks=4)["all_gather"]
    assert forced.nvlink_path_from == 16 * MiB


def test_disabled_or_single_gpu_never_splits_and_says_why(settings_table):
    for r in rules(with_values(settings_table, disable=1)).values():
        assert r.pcie_from is None and "BRAID_DISABLE" in doctor.describe_rule(r)
    for r in rules(with_values(settings_table), ranks=1).values():
        assert r.pcie_from is None and "fewer than 2 GPUs" in r.why_not


def test_refused_values_fall_back_to_the_default_as_braid_does(settings_table):
    table = with_values(settings_table, nvlink_path="sideways", split_min_bytes="lots")
    r = rules(table)["all_gather"]
    assert r.pcie_from == 128 * MiB and r.nvlink_path_from == 16 * MiB


def test_settings_lines_flag_unknown_and_refused_variables(settings_table):
    lines = doctor.settings_lines(settings_table, {"BRAID_BALANCER": "fancy", "BRAID_TIMEOUT": "5",
                                                   "BRAID_TIMEOUTS": "5", "PATH": "/bin"})
    text = "\n".join(lines)
    assert "BRAID_BALANCER=fancy   NOT ALLOWED: one of hylink, flexlink, static" in text
    assert "BRAID_TIMEOUT=5\n" in text + "\n"
    assert "BRAID_TIMEOUTS=5   UNKNOWN" in text
    assert "PATH" not in text
    assert doctor.settings_lines(settings_table, {})[0].startswith("none")


def test_report_without_a_gpu_says_so_and_explains_the_simulator(run_braid):
    if doctor.has_gpu(doctor.discovered_topology()):
        import pytest
        pytest.skip("this machine has a GPU")
    out = run_braid("doctor", env={"BRAID_SPLIT_MIN_BYTES": str(256 * MiB)}).stdout
    for section in ("== machine", "== NCCL and PyTorch ==", "== PCIe ceiling", "== what braid splits",
                    "== BRAID_* settings set ==", "== no GPU =="):
        assert section in out
    assert "no GPU on this machine: nothing to measure." in out
    assert "all_reduce      from  256M" in out
    assert "BRAID_SPLIT_MIN_BYTES=268435456" in out
    assert "Every figure it prints is a prediction" in out


def test_one_gpu_explains_the_rig_and_uses_the_rules_without_nvlink(settings_table):
    one_gpu = {"nodes": [{"kind": "gpu", "name": "gpu0"}, {"kind": "numa", "name": "numa0", "cores": 8}], "links": []}
    text = "\n".join(doctor._split_lines(with_values(settings_table), one_gpu, gpu=True))
    assert "One GPU" in text and "bench/rig/" in text
    assert "all_reduce      from    1M" in text  # HyLink's S_min without NVLink
