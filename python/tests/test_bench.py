"""braid bench without a GPU (the simulator): progress, results.json, the PNG and what it plots."""

import json
import os

import pytest

from braid import bench
from conftest import png_pixels

pytest.importorskip("matplotlib")


def test_sim_bench_shows_braid_against_nccl_on_2_4_and_8_h200s(run_braid, tmp_path):
    out = tmp_path / "out"
    result = run_braid("bench", "--sim", "--quick", "--out", str(out))
    assert f"plot in {out / 'algbw.png'}" in result.stdout
    # Said plainly: predictions of a model calibrated to dated measurements, beside the measured.
    assert "predictions (model calibrated to measurements of 2026-" in result.stdout
    assert "NOT measured on this machine" in result.stdout
    assert "8x H200" in result.stdout and "(none yet)" in result.stdout
    measured_lines = [line for line in result.stdout.splitlines() if line.strip().startswith("measured")
                      or " measured " in line]
    assert any("(2026-11-2" in line for line in measured_lines)
    results = json.loads((out / "results.json").read_text())
    assert results["predicted"] is True
    assert [run["label"] for run in results["runs"]] == ["h200x2", "h200x4", "h200x8"]
    rows = {(run["label"], r["collective"], r["size"]): r for run in results["runs"] for r in run["result"]["rows"]}
    assert {k[1] for k in rows} == {"all_gather", "all_reduce", "reduce_scatter"}
    # Against NCCL, not a modelled ring: 2 GPUs gain in all_gather (braid's copy engines), as measured.
    gather2 = rows[("h200x2", "all_gather", 64 << 20)]
    assert gather2["ratio"] > 1.3 and gather2["measured"]["ratio_low"] > 1.3
    assert gather2["ratio"] == pytest.approx(gather2["nccl_time_us"] / gather2["time_us"])
    assert rows[("h200x4", "all_reduce", 1 << 30)]["measured"]["date"].startswith("2026-")
    assert rows[("h200x8", "all_reduce", 1 << 30)]["measured"] is None
    # What the picture shows is the results' rows, series by series: braid beside NCCL's curve.
    plotted = json.loads((out / "algbw.plot.json").read_text())["series"]
    braid_series = {s["collective"]: s for s in plotted if s["label"] == "braid (predicted)"}
    for (machine, collective, size), r in rows.items():
        s = braid_series[f"{collective} on {machine}"]
        assert r["algbw"] == pytest.approx(s["algbw"][s["size"].index(size)])
    assert sum(s["label"] == "NCCL (measured curve)" for s in plotted) == 9
    # The PNG is a real picture, not blank: many distinct colours on a large canvas.
    pixels = png_pixels(out / "algbw.png")
    assert pixels.shape[0] > 300 and pixels.shape[1] > 600
    flat = pixels.reshape(-1, pixels.shape[-1])
    assert len({tuple(p) for p in flat[:: max(1, len(flat) // 20000)]}) > 20
    assert (flat[:, :3] < 0.5).any(), "no dark pixel: nothing drawn"
    assert {r["series"] for r in results["ratios"]} == {
        f"{c} {m} predicted vs NCCL" for m in ("h200x2", "h200x4", "h200x8")
        for c in ("all_gather", "all_reduce", "reduce_scatter")}


def test_sim_bench_on_another_topology_keeps_the_host_ring(run_braid, tmp_path):
    # NCCL's curves were measured on H200s only: elsewhere braid's PCIe programs meet a modelled ring.
    out = tmp_path / "out"
    run_braid("bench", "--sim", "--quick", "--topo", "pcie-8gpu-2socket", "--out", str(out))
    results = json.loads((out / "results.json").read_text())
    assert results["topology"] == "pcie-8gpu-2socket"
    assert {r["series"] for r in results["ratios"]} == {"all_reduce predicted vs ring", "all_gather predicted vs ring"}


def test_check_against_own_results_passes_and_against_a_better_baseline_fails(run_braid, tmp_path):
    out = tmp_path / "first"
    run_braid("bench", "--sim", "--quick", "--out", str(out))
    passed = run_braid("bench", "--sim", "--quick", "--out", str(tmp_path / "second"),
                       "--check", str(out / "results.json"))
    assert "PASS" in passed.stdout
    better = json.loads((out / "results.json").read_text())
    better["ratios"][0]["ratio"] *= 1.2
    (tmp_path / "better.json").write_text(json.dumps(better))
    failed = run_braid("bench", "--sim", "--quick", "--out", str(tmp_path / "third"),
                       "--check", str(tmp_path / "better.json"), "--tolerance", "0.05", check=False)
    assert failed.returncode == 1
    assert "REGRESSION " + better["ratios"][0]["series"] in failed.stdout


def test_progress_lines_count_rows(tmp_path, capfd):
    script = tmp_path / "fake-tool"
    script.write_text("#!/bin/sh\necho '# header'\necho '  1024 256 float'\necho '  2048 512 float'\n")
    os.chmod(script, 0o755)
    assert bench.run_with_progress([str(script)], dict(os.environ), 1, 2, 2, progress_after=0) == 0
    err = capfd.readouterr().err
    assert "run 1/2: 1/2 rows" in err and "run 1/2: 2/2 rows" in err


def test_expected_rows_follow_the_size_flags():
    defaults = {"b": "1M", "e": "1G", "f": "4", "collectives": 6}
    assert bench.expected_rows(["-b", "1M", "-e", "64M", "-f", "8"], defaults) == 3 * 6
    assert bench.expected_rows(["-b", "1M", "-e", "1G", "-f", "4", "-C", "all_reduce"], defaults) == 6
    assert bench.expected_rows(["-d", "all"], defaults) is None
