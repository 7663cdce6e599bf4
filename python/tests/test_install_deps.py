"""tools/install_deps.sh, the one set-up step of ./run.sh, ./test.sh and .ci/run: it installs only
the Debian packages missing as root, and otherwise prints the one apt-get line to run."""

import os
import subprocess

import pytest

from conftest import CHECKOUT, in_checkout

pytestmark = pytest.mark.skipif(not in_checkout(), reason="needs the sources")


def run_install(tmp_path, uid, missing):
    """The script against fake dpkg (which lacks `missing`), id and apt-get (which logs its calls)."""
    fake = tmp_path / "bin"
    fake.mkdir()
    scripts = {
        "dpkg": "#!/bin/sh\nfor p in $MISSING; do [ \"$2\" = \"$p\" ] && exit 1; done\nexit 0\n",
        "id": f"#!/bin/sh\necho {uid}\n",
        "apt-get": "#!/bin/sh\necho \"$*\" >> \"$APT_LOG\"\n",
    }
    for name, text in scripts.items():
        (fake / name).write_text(text)
        os.chmod(fake / name, 0o755)
    log = tmp_path / "apt.log"
    env = {**os.environ, "PATH": f"{fake}:/usr/bin:/bin", "MISSING": " ".join(missing), "APT_LOG": str(log)}
    result = subprocess.run([str(CHECKOUT / "tools" / "install_deps.sh")], capture_output=True, text=True, env=env)
    return result, (log.read_text().splitlines() if log.exists() else [])


def test_as_root_installs_only_the_missing_packages(tmp_path):
    result, apt = run_install(tmp_path, 0, ["libglpk-dev", "libcli11-dev"])
    assert result.returncode == 0, result.stderr
    assert apt[0].startswith("update")
    assert apt[1].split()[-2:] == ["libcli11-dev", "libglpk-dev"] and apt[1].startswith("install -y")


def test_not_root_prints_the_one_apt_get_line_and_fails(tmp_path):
    result, apt = run_install(tmp_path, 1000, ["libglpk-dev"])
    assert result.returncode != 0 and apt == []
    [line] = result.stderr.splitlines()
    assert line.endswith("sudo apt-get install -y libglpk-dev")


def test_nothing_missing_does_nothing(tmp_path):
    result, apt = run_install(tmp_path, 1000, [])
    assert result.returncode == 0 and apt == [] and result.stderr == ""


@pytest.mark.parametrize("script", ["run.sh", "test.sh", ".ci/run"])
def test_every_entry_point_calls_it(script):
    assert "tools/install_deps.sh" in (CHECKOUT / script).read_text()


def test_run_sh_help_needs_no_build(tmp_path):
    # A cmake that only notes it was called: --help must not get that far.
    (tmp_path / "cmake").write_text(f"#!/bin/sh\ntouch {tmp_path}/cmake-called\nexit 1\n")
    os.chmod(tmp_path / "cmake", 0o755)
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}
    result = subprocess.run([str(CHECKOUT / "run.sh"), "--help"], capture_output=True, text=True, env=env,
                            timeout=60)
    assert not (tmp_path / "cmake-called").exists()
    assert result.returncode == 0 and "usage: ./run.sh" in result.stdout and "tool arguments" in result.stdout
