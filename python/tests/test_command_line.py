"""The command line as a newcomer meets it (issue 44): a failing tool stops `braid bench`, the
pass-through commands hand over --help, sizes keep their defaults, and every error is one line."""

import json
import re

import pytest

import braid
from braid import bench
from conftest import CHECKOUT, in_checkout


def braid_lines(stderr, command):
    return [line for line in stderr.splitlines() if line.startswith(f"braid {command}:")]


def test_bench_stops_where_its_tool_fails(run_braid, tmp_path):
    out = tmp_path / "out"
    result = run_braid("bench", "--sim", "--bogus", "--out", str(out), check=False)
    assert result.returncode != 0
    assert not out.exists(), "a results folder was left for a run that did not happen"
    assert "plot in" not in result.stdout and "results in" not in result.stdout
    assert "legend" not in result.stderr and "Warning" not in result.stderr
    [line] = braid_lines(result.stderr, "bench")
    assert "braid-sim failed" in line and "--help" in line


def test_bench_help_documents_the_pass_through(run_braid):
    out = run_braid("bench", "--help").stdout
    assert "tool arguments" in out and "braid-sim" in out and "braid-bench" in out
    assert "-b 1M -e 1G -f 4" in out


def test_bench_keeps_the_default_sizes_the_user_did_not_give(run_braid, tmp_path):
    out = tmp_path / "out"
    result = run_braid("bench", "--sim", "--quick", "-b", "16M", "-C", "all_reduce", "--out", str(out))
    command = next(line for line in result.stdout.splitlines() if line.startswith("+ ") and "braid-sim" in line)
    assert "-e 64M -f 8" in command and "-b 16M" in command
    rows = [r for run in json.loads((out / "results.json").read_text())["runs"] for r in run["result"]["rows"]]
    assert rows and max(r["size"] for r in rows) <= 64 << 20


def test_default_sizes_fill_in_only_what_is_missing():
    sizes = ["-b", "1M", "-e", "1G", "-f", "4"]
    assert bench.with_default_sizes(["-b", "4M"], sizes) == ["-e", "1G", "-f", "4", "-b", "4M"]
    assert bench.with_default_sizes(["--maxbytes=8M", "-C", "all_gather"], sizes) == \
        ["-b", "1M", "-f", "4", "--maxbytes=8M", "-C", "all_gather"]
    assert bench.with_default_sizes(["--", "-i", "1M"], sizes) == ["-b", "1M", "-e", "1G", "-i", "1M"]
    assert bench.with_default_sizes([], sizes) == sizes


@pytest.mark.parametrize("args", [("plan", "--help"), ("plan", "--", "--help")])
def test_plan_shows_the_tools_own_help(run_braid, args):
    out = run_braid(*args).stdout
    for flag in ("--topo", "--ranks", "--list-topologies", "--show-settings", "--cost-only"):
        assert flag in out


def test_plan_passes_its_arguments(run_braid):
    out = run_braid("plan", "allreduce", "--topo", "hylink-3090x4", "--cost-only").stdout
    assert "hylink" in out.lower()


def test_sim_shows_the_tools_own_help_and_passes_its_arguments(run_braid):
    out = run_braid("sim", "--help").stdout
    for flag in ("--minbytes", "--maxbytes", "--collective", "alltoallv"):
        assert flag in out
    rows = run_braid("sim", "-C", "all_gather", "-b", "1M", "-e", "1M").stdout
    assert "all_gather" in rows and "all_reduce" not in rows


def test_version(run_braid):
    out = run_braid("--version").stdout
    assert out.strip() == f"braid {braid.__version__}"
    if in_checkout():
        cmake = (CHECKOUT / "CMakeLists.txt").read_text()
        assert braid.__version__ == re.search(r"project\(braid VERSION ([0-9.]+)", cmake).group(1)


def test_topo_shows_whole_words_and_no_internal_wording(run_braid):
    listing = run_braid("topo").stdout
    shown = dict(re.findall(r"^(\S+)\s+\d+ GPUs\s+\d+ NUMA  (.*)$", listing, re.MULTILINE))
    assert "h200x2" in shown and "hylink-3090x4" in shown
    for name, text in shown.items():
        description = json.loads((braid.topology_dir() / f"{name}.json").read_text())["description"]
        head = text[:-3] if text.endswith("...") else text
        assert description.startswith(head), name
        assert len(head) == len(description) or not description[len(head)].isalnum(), \
            f"{name}: cut mid-word: {text!r}"
    for path in braid.topology_dir().glob("*.json"):
        description = json.loads(path.read_text())["description"]
        # The machines these were measured on are described, not named as this project's lab calls them.
        assert not re.search(r"device machine|nvidia-h200|\blent\b|DESIGN\.md", description), path.name


@pytest.mark.parametrize("args,names", [
    (("trace", "missing.jsonl"), "missing.jsonl"),
    (("plot", "missing.json"), "missing.json"),
    (("bogus",), "bogus"),
    (("bench", "--sim", "--tolerance", "x"), "--tolerance"),
])
def test_errors_are_one_line_that_says_what_to_do(run_braid, args, names):
    result = run_braid(*args, check=False)
    assert result.returncode != 0
    [line] = result.stderr.strip().splitlines()
    assert names in line and "Errno" not in line
    assert re.search(r"writes one|give |--help|check the path", line), line
