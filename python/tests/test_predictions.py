"""The table `braid bench` prints without a GPU (braid.predictions), from braid-sim's JSON."""

from braid import predictions


def _part(topology, rows, ranks=2):
    return {"label": topology, "result": {"tool": "braid-sim versus-nccl", "topology": topology, "ranks": ranks,
                                          "calibrated_to": "2026-11-26 to 2026-11-28", "rows": rows}}


def _row(collective, size, ratio, settled, measured=None):
    return {"collective": collective, "size": size, "ratio": ratio, "settled_ratio": settled, "measured": measured}


def test_table_puts_each_prediction_beside_the_measured_ratio_and_its_date():
    measured = {"ratio_low": 1.34, "ratio_high": 1.51, "date": "2026-11-28", "source": "issue 42"}
    lines = predictions.summary_lines([
        _part("h200x2", [_row("all_gather", 16 << 20, 1.512, 1.51, measured), _row("all_gather", 1 << 30, 1.31, 1.42)]),
        _part("h200x8", [_row("all_gather", 16 << 20, 1.0, 1.0)], ranks=8)])
    text = "\n".join(lines)
    assert lines[0].startswith("braid bench: predictions (model calibrated to measurements of 2026-11-26 to 2026-11-28)")
    assert "2x H200, 2 ranks:" in text and "8x H200" in text
    measured_line = next(line for line in lines if "measured" in line and "1.34-1.51" in line)
    assert "(2026-11-28)" in measured_line and measured_line.split()[-2] == "-"  # 1 GiB: none stored
    predicted_line = next(line for line in lines if "all_gather" in line and "predicted" in line)
    assert predicted_line.split()[-2:] == ["1.51", "1.31"]
    assert "(none yet)" in text


def test_every_calibrated_machine_gets_a_run_and_others_do_not():
    runs = predictions.run_args(quick=False)
    assert [r[2] for r in runs] == ["h200x2", "h200x4", "h200x8"]
    assert all(r[0] == "versus-nccl" for r in runs)
    assert predictions.covers("h200x4") and not predictions.covers("flexlink-h800x8")
