"""Finds braid's built C++ tools (BRAID_BUILD_DIR, default build/ beside the sources)."""

import os
import pathlib
import shutil

ROOT = pathlib.Path(__file__).resolve().parents[2]


def build_dir() -> pathlib.Path:
    return pathlib.Path(os.environ.get("BRAID_BUILD_DIR", ROOT / "build")).resolve()


def tool(name: str) -> str:
    """Path of a built tool such as 'braid-plan'; raises FileNotFoundError naming where it looked."""
    candidate = build_dir() / "tools" / name / name
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return str(candidate)
    found = shutil.which(name)
    if found:
        return found
    raise FileNotFoundError(f"{name} is not built: looked for {candidate} and on PATH (run ./test.sh or ./run.sh first)")
