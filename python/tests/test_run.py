"""braid run: the environment a preloaded command gets, and --compare."""

import os

from braid import run

LIB = "/opt/braid/lib/libbraid.so"


def test_preload_goes_first_and_keeps_what_was_there():
    env = run.preload_env(LIB, {"LD_PRELOAD": "/x/libfoo.so"}, debug="INFO", trace="t.jsonl")
    assert env["LD_PRELOAD"] == f"{LIB}:/x/libfoo.so"
    assert env["BRAID_DEBUG"] == "INFO"
    assert env["BRAID_SPLIT_TRACE"] == os.path.abspath("t.jsonl")


def test_preload_is_not_doubled():
    env = run.preload_env(LIB, {"LD_PRELOAD": f"{LIB} /x/libfoo.so"})
    assert env["LD_PRELOAD"] == f"{LIB}:/x/libfoo.so"
    assert "BRAID_DEBUG" not in env and "BRAID_SPLIT_TRACE" not in env


def test_plain_run_drops_only_braid():
    assert run.plain_env(LIB, {"LD_PRELOAD": f"{LIB}:/x/libfoo.so"})["LD_PRELOAD"] == "/x/libfoo.so"
    assert "LD_PRELOAD" not in run.plain_env(LIB, {"LD_PRELOAD": LIB})


def test_run_and_compare_run_the_command_as_asked(run_braid, tmp_path):
    # Any existing shared library stands in for libbraid.so here: what is checked is the
    # environment each run gets and the report, not braid itself.
    stand_in = "/lib/x86_64-linux-gnu/libm.so.6" if os.path.exists("/lib/x86_64-linux-gnu/libm.so.6") else None
    if stand_in is None:
        import pytest
        pytest.skip("no stand-in library")
    show = ["sh", "-c", 'echo "preload=[$LD_PRELOAD] debug=[$BRAID_DEBUG]"']
    one = run_braid("run", "--library", stand_in, "--debug", "WARN", "--", *show)
    assert f"preload=[{stand_in}] debug=[WARN]" in one.stdout
    both = run_braid("run", "--library", stand_in, "--compare", "--", *show)
    assert "preload=[] debug=[]" in both.stdout and f"preload=[{stand_in}] debug=[]" in both.stdout
    assert "wall time without braid" in both.stdout and "with braid" in both.stdout
    failing = run_braid("run", "--library", stand_in, "--", "sh", "-c", "exit 3", check=False)
    assert failing.returncode == 3
    assert run_braid("run", "--library", stand_in, check=False).returncode == 2
