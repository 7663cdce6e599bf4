"""braid bench without a GPU (the simulator): progress, results.json, the PNG and what it plots."""

import json
import os

import pytest

from braid import bench
from conftest import png_pixels

pytest.importorskip("matplotlib")


def test_sim_bench_writes_results_and_a_png_holding_its_series(run_braid, tmp_path):
    out = tmp_path / "out"
    result = run_braid("bench", "--sim", "--quick", "--out", str(out))
    assert f"plot in {out / 'algbw.png'}" in result.stdout
    results = json.loads((out / "results.json").read_text())
    assert results["predicted"] is True and results["topology"] == "h200x2"
    rows = [r for run in results["runs"] for r in run["result"]["rows"]]
    assert {r["collective"] for r in rows} == {"all_reduce", "all_gather", "reduce_scatter", "broadcast",
                                               "reduce", "alltoall"}
    # What the picture shows is the results' rows, series by series.
    plotted = json.loads((out / "algbw.plot.json").read_text())["series"]
    braid_series = {s["collective"]: s for s in plotted if s["label"] == "braid (predicted)"}
    for r in rows:
        s = braid_series[r["collective"]]
        assert r["algbw"] == pytest.approx(s["algbw"][s["size"].index(r["size"])])
    assert any(s["label"] == "host ring (predicted)" for s in plotted)
    # The PNG is a real picture, not blank: many distinct colours on a large canvas.
    pixels = png_pixels(out / "algbw.png")
    assert pixels.shape[0] > 300 and pixels.shape[1] > 600
    flat = pixels.reshape(-1, pixels.shape[-1])
    assert len({tuple(p) for p in flat[:: max(1, len(flat) // 20000)]}) > 20
    assert (flat[:, :3] < 0.5).any(), "no dark pixel: nothing drawn"
    # Ratios are braid's predicted time against the predicted ring's, where there is one.
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
