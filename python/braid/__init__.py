"""braid's Python package: the `braid` command (run, doctor, bench, trace, ...) and where its
native parts are. `braid.library_path()` is the drop-in libbraid.so to LD_PRELOAD."""

import importlib.metadata
import pathlib
import re


def _version() -> str:
    """The one source is CMakeLists.txt's project(braid VERSION ...): a source checkout reads it
    there; an installed package reads its metadata, which pip took from the same line
    (pyproject.toml's metadata.version)."""
    cmake = pathlib.Path(__file__).resolve().parents[2] / "CMakeLists.txt"
    if cmake.is_file():
        found = re.search(r"project\(braid VERSION ([0-9.]+)", cmake.read_text())
        if found:
            return found.group(1)
    try:
        return importlib.metadata.version("braid")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


__version__ = _version()

from braid.tools import library_path, tool, topology_dir  # noqa: E402


def main(argv=None) -> int:
    from braid.cli import main as cli_main

    return cli_main(argv)


__all__ = ["__version__", "library_path", "tool", "topology_dir", "main"]
