"""bench/gpu_check.sh on stubs: a fake nvidia-smi with 2 GPUs, GPU tests that pass or fail, and a
braid-bench that prints rows and writes JSON. Checks the dated folder, the summary's verdicts,
the main job's JSON and PNG, and that a budget too small for a part names it for the next call.
Nothing here runs on a GPU; the script's GPU commands are what the stubs stand for."""

import glob
import json
import os
import shutil
import subprocess
import sys

import pytest

from braid import tools
from conftest import CHECKOUT, in_checkout

pytestmark = [pytest.mark.skipif(not in_checkout(), reason="needs the sources (bench/gpu_check.sh)"),
              pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")]
pytest.importorskip("matplotlib")

GTEST_PASS = "#!/bin/sh\necho '[==========] 3 tests ran.'\necho '[  PASSED  ] 3 tests.'\n"
GTEST_FAIL = "#!/bin/sh\necho '[  FAILED  ] 1 test, listed below:'\nexit 1\n"
BENCH = f"""#!{sys.executable}
import json, sys
a = sys.argv
out = a[a.index("-J") + 1] if "-J" in a else None
if "--ceiling-only" in a:
    per = [{{"device": d, "d2h": 52.0, "h2d": 51.0 - d}} for d in (0, 1)]
    json.dump({{"ceiling_gbps": 50.0, "ceiling": {{"bytes": 1 << 28, "per_gpu": per}}}}, open(out, "w"))
    sys.exit(0)
c = a[a.index("-C") + 1] if "-C" in a else "all_reduce"
rows = []
for size in (1 << 24, 1 << 26):
    print(f"  {{size}} {{size // 4}} float sum -1 1.0 110.0 110.0 0 1.0 100.0 100.0 0 1.10", flush=True)
    base = {{"collective": c, "size": size, "type": "float", "redop": "sum", "in_place": False}}
    rows += [dict(base, path="braid_multipath", algbw=110.0), dict(base, path="nccl", algbw=100.0)]
if out:
    json.dump({{"rows": rows}}, open(out, "w"))
"""


def stub(path, text):
    path.write_text(text)
    os.chmod(path, 0o755)


@pytest.fixture
def rig(tmp_path):
    bin_dir, bundle = tmp_path / "bin", tmp_path / "bundle"
    (bundle / "lib").mkdir(parents=True)
    bin_dir.mkdir()
    stub(bin_dir / "nvidia-smi", "#!/bin/sh\necho 'GPU 0: stub (UUID: GPU-0)'\necho 'GPU 1: stub (UUID: GPU-1)'\n")
    for name in ("api_usage_test", "shim_multipath_gpu_test", "shim_group_gpu_test"):
        stub(bundle / name, GTEST_PASS)
    stub(bundle / "braid-bench", BENCH)
    shutil.copy(tools.tool("braid-plan"), bundle / "braid-plan")  # the real one: doctor's discovery
    env = {**os.environ, "PATH": f"{bin_dir}:{os.path.dirname(sys.executable)}:{os.environ['PATH']}",
           "OUT": str(tmp_path / "out"), "GPU_CHECK_BUNDLE": str(bundle)}
    return bundle, env, tmp_path / "out"


def run_check(env, *parts, budget=560):
    return subprocess.run(["bash", str(CHECKOUT / "bench" / "gpu_check.sh"), *parts], capture_output=True,
                          text=True, env={**env, "GPU_CHECK_BUDGET": str(budget)}, timeout=300)


def test_tests_and_main_job_leave_a_dated_folder_with_a_summary(rig):
    bundle, env, out = rig
    result = run_check(env, "tests", "main")
    assert result.returncode == 0, result.stdout + result.stderr
    (folder,) = glob.glob(str(out / "gpu-check-*"))
    summary = open(os.path.join(folder, "summary.md")).read()
    for line in ("- PASS doctor", "ceiling (slowest GPU and direction): 50.0 GB/s", "- PASS api_usage", "- PASS shim_multipath ", "- PASS shim_multipath_nvlink_nccl",
                 "- PASS shim_group", "- PASS main_job", "Verdict: PASS"):
        assert line in summary, summary
    assert "ratio all_reduce multipath (braid/NCCL algbw): 16M 1.10, 64M 1.10" in summary
    results = json.load(open(os.path.join(folder, "main", "results.json")))
    # The default job: three collectives as the drop-in splits them, then the PCIe path alone.
    assert {r["series"] for r in results["ratios"]} == {"all_reduce multipath", "all_gather multipath",
                                                        "reduce_scatter multipath", "all_reduce pcie"}
    assert os.path.getsize(os.path.join(folder, "main", "algbw.png")) > 10000
    assert os.path.exists(os.path.join(folder, "logs.tar.gz"))


def test_a_failing_test_fails_the_check(rig):
    bundle, env, out = rig
    stub(bundle / "shim_group_gpu_test", GTEST_FAIL)
    result = run_check(env, "tests")
    assert result.returncode == 1
    assert "- **FAIL** shim_group (rc=1" in result.stdout and "Verdict: FAIL" in result.stdout


def test_a_part_that_does_not_fit_is_named_for_the_next_call(rig):
    bundle, env, out = rig
    result = run_check(env, "main", "tests", budget=140)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Not run, out of budget: tests. Next call: bash bench/gpu_check.sh tests" in result.stdout
