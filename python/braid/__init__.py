"""braid's Python package: the `braid` command (run, doctor, bench, trace, ...) and where its
native parts are. `braid.library_path()` is the drop-in libbraid.so to LD_PRELOAD."""

__version__ = "0.1.0"  # CMakeLists.txt's project(braid VERSION ...); a test checks they agree

from braid.tools import library_path, tool, topology_dir  # noqa: E402


def main(argv=None) -> int:
    from braid.cli import main as cli_main

    return cli_main(argv)


__all__ = ["__version__", "library_path", "tool", "topology_dir", "main"]
