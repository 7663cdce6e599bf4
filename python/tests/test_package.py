"""The package finds its native parts with no path typed, and its version is CMake's."""

import os
import re
import subprocess

import pytest

import braid
from braid import tools
from conftest import CHECKOUT, in_checkout


def test_tools_and_topologies_are_found():
    for name in ("braid-plan", "braid-sim"):
        assert os.access(tools.tool(name), os.X_OK)
    assert (braid.topology_dir() / "h200x2.json").is_file()


def test_the_tools_find_the_bundled_topologies_wherever_they_run(tmp_path):
    listing = subprocess.run([tools.tool("braid-plan"), "--list-topologies"], capture_output=True, text=True,
                             cwd=tmp_path, check=True).stdout
    assert "h200x2" in listing and "hylink-3090x4" in listing


def test_library_path_is_the_drop_in_or_says_why_not():
    try:
        path = braid.library_path()
    except FileNotFoundError as e:
        assert "CUDA" in str(e)
        return
    assert path.endswith("libbraid.so") and os.path.isfile(path)


@pytest.mark.skipif(not in_checkout(), reason="needs the sources")
def test_version_is_cmakes():
    cmake = (CHECKOUT / "CMakeLists.txt").read_text()
    assert re.search(r"project\(braid VERSION ([0-9.]+)", cmake).group(1) == braid.__version__


def test_python_m_braid_and_the_help_list_every_command(run_braid):
    out = run_braid("--help").stdout
    for command in ("run", "doctor", "bench", "trace", "sim", "plan", "topo", "plot"):
        assert command in out
