"""The ratios braid bench --check compares, and the check itself."""

import pytest

from braid import ratios


def gpu_results(braid_algbw, nccl_algbw, size=1 << 28):
    rows = [{"collective": "all_reduce", "size": size, "type": "float", "redop": "sum", "in_place": False,
             "path": "braid_multipath", "algbw": braid_algbw},
            {"collective": "all_reduce", "size": size, "type": "float", "redop": "sum", "in_place": False,
             "path": "nccl", "algbw": nccl_algbw}]
    results = {"predicted": False, "runs": [{"label": "multipath", "env": {}, "result": {"rows": rows}}]}
    results["ratios"] = ratios.ratio_table(results)
    return results


def test_ratio_is_braid_over_nccl_of_the_same_row():
    table = ratios.ratio_table(gpu_results(330.0, 300.0))
    assert len(table) == 1
    assert table[0]["series"] == "all_reduce multipath"
    assert abs(table[0]["ratio"] - 1.1) < 1e-12


def test_absolute_speed_does_not_matter_only_the_ratio():
    baseline = gpu_results(330.0, 300.0)
    slower_machine = gpu_results(165.0, 150.0)
    assert ratios.check(baseline, slower_machine, 0.05).ok


def test_a_drop_beyond_the_tolerance_fails_and_within_passes():
    baseline = gpu_results(330.0, 300.0)
    assert not ratios.check(baseline, gpu_results(310.0, 300.0), 0.05).ok   # 1.10 -> 1.033: -6%
    assert ratios.check(baseline, gpu_results(316.0, 300.0), 0.05).ok       # 1.10 -> 1.053: -4%
    assert ratios.check(baseline, gpu_results(310.0, 300.0), 0.10).ok


def test_missing_series_and_no_overlap_fail():
    baseline = gpu_results(330.0, 300.0)
    other_size = gpu_results(330.0, 300.0, size=1 << 20)
    verdict = ratios.check(baseline, other_size, 0.05)
    assert not verdict.ok and verdict.missing and "MISSING" in verdict.text()
    assert not ratios.check([], other_size).ok


def test_simulator_ratio_is_against_the_predicted_ring():
    rows = [{"collective": "all_reduce", "size": 1 << 20, "time_us": 50.0, "ring_time_us": 60.0, "algbw": 21.0},
            {"collective": "broadcast", "size": 1 << 20, "time_us": 50.0, "ring_time_us": 0, "algbw": 21.0}]
    table = ratios.ratio_table({"predicted": True, "runs": [{"label": "predicted", "result": {"rows": rows}}]})
    assert [(r["series"], r["ratio"]) for r in table] == [("all_reduce predicted vs ring", 1.2)]


def test_simulator_ratio_on_h200_is_the_models_braid_against_nccls_curve():
    rows = [{"collective": "all_gather", "size": 1 << 30, "time_us": 1500.0, "nccl_time_us": 2000.0,
             "ratio": 2000.0 / 1500.0, "algbw": 715.8}]
    table = ratios.ratio_table({"predicted": True, "runs": [{"label": "h200x2", "result": {"rows": rows}}]})
    assert [r["series"] for r in table] == ["all_gather h200x2 predicted vs NCCL"]
    assert table[0]["ratio"] == pytest.approx(4 / 3)
    assert table[0]["baseline_algbw"] == pytest.approx((1 << 30) / 2000e-6 / 1e9)
