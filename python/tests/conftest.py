"""Shared fixtures of the Python tests: they run against the braid found on sys.path, a source
checkout's (PYTHONPATH=python, tools in build/) or an installed package's (pip install .)."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

import braid
from braid import tools

CHECKOUT = pathlib.Path(__file__).resolve().parents[2]


def in_checkout() -> bool:
    return (CHECKOUT / "CMakeLists.txt").is_file() and (CHECKOUT / "src" / "multipath").is_dir()


@pytest.fixture
def run_braid(tmp_path):
    """Runs `braid ARGS` in a child process (as a user would), in tmp_path; returns the result."""
    # The child imports the braid this test imported, from whatever folder it runs in.
    here = str(pathlib.Path(braid.__file__).resolve().parents[1])
    path = os.pathsep.join(p for p in [here, os.environ.get("PYTHONPATH", "")] if p)

    # ... and the same build folder, whatever the folder it was named from.
    base = {**os.environ, "PYTHONPATH": path}
    if base.get("BRAID_BUILD_DIR"):
        base["BRAID_BUILD_DIR"] = os.path.abspath(base["BRAID_BUILD_DIR"])

    def run(*args, env=None, check=True):
        result = subprocess.run([sys.executable, "-m", "braid", *args], cwd=tmp_path, capture_output=True,
                                text=True, env={**base, **(env or {})}, timeout=600)
        if check and result.returncode != 0:
            raise AssertionError(f"braid {' '.join(args)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
        return result
    return run


@pytest.fixture(scope="session")
def settings_table():
    return json.loads(subprocess.run([tools.tool("braid-plan"), "--show-settings"], capture_output=True,
                                     text=True, check=True).stdout)


def png_pixels(path):
    """The PNG's pixels as an array (height, width, channels), through matplotlib's reader."""
    import matplotlib.image

    return matplotlib.image.imread(path)


__all__ = ["braid", "in_checkout", "png_pixels", "CHECKOUT"]
