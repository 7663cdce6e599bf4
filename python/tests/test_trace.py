"""braid trace: reads a split trace as the orchestrator writes it and plots shares and path times."""

import json
import re

import pytest

from braid import trace
from conftest import CHECKOUT, in_checkout, png_pixels

pytest.importorskip("matplotlib")


def record(call, share, nccl_ms, pcie_ms, bytes_=1 << 28, collective="AllReduce"):
    count = bytes_ // 4
    return {"call": call, "collective": collective, "dtype": "float", "bytes": bytes_, "count": count,
            "nccl_elements": int(count * (1 - share)), "pcie_elements": int(count * share),
            "pcie_share": share, "nccl_ms": nccl_ms, "pcie_ms": pcie_ms, "timed": True,
            "next_pcie_share": share, "nvlink_path": "copy"}


def write_trace(path, records, tail=""):
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + tail)


def test_trace_plot_holds_each_calls_share_and_times(run_braid, tmp_path):
    # A balancer converging from 0.05 to 0.10 for one size, and a second size of two calls.
    records = [record(i + 1, 0.05 + 0.01 * min(i, 5), 0.90 - 0.01 * i, 0.5 + 0.05 * i) for i in range(12)]
    records += [record(13 + i, 0.08, 3.1, 2.9, bytes_=1 << 30, collective="AllGather") for i in range(2)]
    path = tmp_path / "split.jsonl"
    write_trace(path, records)
    result = run_braid("trace", str(path))
    png = tmp_path / "split.png"
    assert f"plot in {png}" in result.stdout
    series = json.loads((tmp_path / "split.plot.json").read_text())["series"]
    assert [(s["collective"], s["bytes"], len(s["call"])) for s in series] == [
        ("AllGather", 1 << 30, 2), ("AllReduce", 1 << 28, 12)]
    allreduce = series[1]
    assert allreduce["pcie_share"] == [r["pcie_share"] for r in records[:12]]
    assert allreduce["nccl_ms"] == [r["nccl_ms"] for r in records[:12]]
    assert allreduce["pcie_ms"] == [r["pcie_ms"] for r in records[:12]]
    pixels = png_pixels(png)
    assert pixels.shape[0] > 300 and (pixels[:, :, :3] < 0.5).any()


def test_a_partial_last_line_is_skipped_and_reported(tmp_path, capsys):
    path = tmp_path / "cut.jsonl"
    write_trace(path, [record(1, 0.1, 1.0, 1.0)], tail='{"call": 2, "collec')
    records, bad = trace.read_trace(str(path))
    assert len(records) == 1 and bad == 1
    assert "cut.jsonl:2: not JSON" in capsys.readouterr().err


def test_an_empty_trace_fails(run_braid, tmp_path):
    (tmp_path / "empty.jsonl").write_text("")
    assert run_braid("trace", str(tmp_path / "empty.jsonl"), check=False).returncode == 1


@pytest.mark.skipif(not in_checkout(), reason="needs the sources (src/multipath/split_trace.cpp)")
def test_the_orchestrator_writes_every_field_braid_trace_reads():
    source = (CHECKOUT / "src" / "multipath" / "split_trace.cpp").read_text()
    written = set(re.findall(r'\\"([a-z_]+)\\":', source))
    assert set(trace.FIELDS) <= written, set(trace.FIELDS) - written


def test_declined_calls_are_counted_not_plotted(run_braid, tmp_path):
    declined = {"declined": "inside an NCCL group", "collective": "AllReduce", "dtype": "float",
                "bytes": 1 << 28, "count": 1 << 26}
    path = tmp_path / "mixed.jsonl"
    write_trace(path, [record(1, 0.1, 1.0, 1.0), declined, declined, record(2, 0.1, 1.0, 1.0)])
    result = run_braid("trace", str(path))
    assert f"declined 2 x AllReduce {1 << 28} B: inside an NCCL group" in result.stdout
    series = json.loads((tmp_path / "mixed.plot.json").read_text())["series"]
    assert [len(s["call"]) for s in series] == [2]


@pytest.mark.skipif(not in_checkout(), reason="needs the sources (src/multipath/split_trace.cpp)")
def test_the_orchestrator_writes_declined_calls_in_the_form_braid_trace_reads():
    source = (CHECKOUT / "src" / "multipath" / "split_trace.cpp").read_text()
    declined = source[source.index("void SplitTrace::declined"):]
    declined = declined[:declined.index("\n}\n")]
    for key in ("declined", "collective", "dtype", "bytes", "count"):
        assert f'\\"{key}\\":' in declined, key
