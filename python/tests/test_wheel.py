"""A wheel built here, installed into a fresh virtual environment, imports and finds its native
parts from another folder: what a user of a prebuilt wheel gets. .ci/run builds the wheel and
names it in BRAID_WHEEL; without it this test is skipped."""

import os
import pathlib
import subprocess
import sys
import venv

import pytest

WHEEL = os.environ.get("BRAID_WHEEL")


@pytest.mark.skipif(not WHEEL, reason="BRAID_WHEEL names no wheel (.ci/run builds one)")
def test_wheel_in_a_fresh_venv_finds_its_library_and_tools(tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    # --no-deps: the native parts need nothing from the registry (plots need matplotlib).
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", WHEEL], check=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "BRAID_BUILD_DIR")}
    probe = ("import braid, os, sys\n"
             "print(braid.__file__)\n"
             "print(braid.tool('braid-sim'))\n"
             "try:\n    print(braid.library_path())\nexcept FileNotFoundError:\n    print('no-library')\n")
    out = subprocess.run([str(python), "-c", probe], cwd=elsewhere, env=clean, capture_output=True, text=True,
                         check=True).stdout.split()
    package = pathlib.Path(out[0]).parent
    assert str(package).startswith(str(env_dir)), out
    assert out[1] == str(package / "bin" / "braid-sim")
    if out[2] != "no-library":
        library = pathlib.Path(out[2])
        assert library == package / "lib" / "libbraid.so"
        # Its Highway and libnuma come from the package, not from the system.
        ldd = subprocess.run(["ldd", str(library)], capture_output=True, text=True, check=True).stdout
        assert f"libhwy.so.1 => {package / 'lib'}" in ldd, ldd
    for tool in (package / "bin").iterdir():
        ldd = subprocess.run(["ldd", str(tool)], capture_output=True, text=True, check=True).stdout
        assert "not found" not in ldd.replace("libnccl.so.2 => not found", ""), (tool, ldd)
    # No NCCL inside: the drop-in forwards to the application's (PyTorch's) own.
    assert not list((package / "lib").glob("libnccl*")), list((package / "lib").iterdir())
    # The console command works from there, and the tools find the bundled topologies.
    sim = subprocess.run([str(env_dir / "bin" / "braid"), "sim", "--topo", "h200x2", "-b", "1M", "-e", "1M",
                          "-C", "all_reduce"], cwd=elsewhere, env=clean, capture_output=True, text=True)
    assert sim.returncode == 0 and "all_reduce" in sim.stdout, sim.stderr
    # The braid-against-NCCL model finds the measurements packaged beside the tools.
    versus = subprocess.run([str(package / "bin" / "braid-sim"), "versus-nccl", "--topo", "h200x8", "-b", "1G",
                             "-e", "1G"], cwd=elsewhere, env=clean, capture_output=True, text=True)
    assert versus.returncode == 0, versus.stderr
    assert str(package / "calibration" / "h200-measured.json") in versus.stdout, versus.stdout
    doctor = subprocess.run([str(env_dir / "bin" / "braid"), "doctor", "--no-measure"], cwd=elsewhere, env=clean,
                            capture_output=True, text=True)
    assert doctor.returncode == 0 and "installed package" in doctor.stdout, doctor.stdout + doctor.stderr
    assert sys.executable  # the outer interpreter is not the one tested
