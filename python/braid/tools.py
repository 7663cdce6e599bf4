"""Finds braid's native parts: the C++ tools, libbraid.so and the bundled topologies.

An installed package (`pip install .`) carries them inside itself (braid/bin, braid/lib,
braid/topologies; python/CMakeLists.txt). A source checkout run as `PYTHONPATH=python python -m
braid` finds them in its build folder (BRAID_BUILD_DIR, default build/ beside the sources).
BRAID_BUILD_DIR, when set, is asked first, so a developer can point an installed command at a
fresh build; it may also be a flat folder of binaries with lib/ beside them (the GPU machine's
gpubundle/, bench/make_gpubundle.sh).
"""

import os
import pathlib
import shutil

PACKAGE = pathlib.Path(__file__).resolve().parent
# The source checkout holding this file, when it is one (python/braid/ inside it).
CHECKOUT = PACKAGE.parents[1]


def _explicit_build_dir():
    value = os.environ.get("BRAID_BUILD_DIR")
    return pathlib.Path(value).resolve() if value else None


def build_dir() -> pathlib.Path:
    """The build folder of a source checkout (may not exist)."""
    return _explicit_build_dir() or (CHECKOUT / "build")


def _executable(path: pathlib.Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _tool_candidates(name: str):
    explicit = _explicit_build_dir()
    if explicit:
        yield explicit / "tools" / name / name
        yield explicit / "bin" / name
        yield explicit / name
    yield PACKAGE / "bin" / name
    if not explicit and (CHECKOUT / "CMakeLists.txt").is_file():
        yield CHECKOUT / "build" / "tools" / name / name


def tool(name: str) -> str:
    """Path of a tool such as 'braid-plan'; raises FileNotFoundError naming where it looked."""
    tried = list(_tool_candidates(name))
    for candidate in tried:
        if _executable(candidate):
            return str(candidate)
    found = shutil.which(name)
    if found:
        return found
    where = ", ".join(str(c) for c in tried)
    raise FileNotFoundError(
        f"{name} is not built: looked in {where} and on PATH "
        "(pip install . builds it; in a checkout ./test.sh or ./run.sh do)")


def library_path() -> str:
    """Path of libbraid.so, the NCCL drop-in; FileNotFoundError when this braid has none (it is
    built only where the CUDA toolkit and nccl.h were found)."""
    explicit = _explicit_build_dir()
    tried = []
    if explicit:
        tried += [explicit / "src" / "shim" / "libbraid.so", explicit / "lib" / "libbraid.so"]
    tried.append(PACKAGE / "lib" / "libbraid.so")
    if not explicit and (CHECKOUT / "CMakeLists.txt").is_file():
        tried.append(CHECKOUT / "build" / "src" / "shim" / "libbraid.so")
    for candidate in tried:
        if candidate.is_file():
            return str(candidate)
    raise FileNotFoundError(
        "libbraid.so is not built: looked for " + ", ".join(str(c) for c in tried) +
        " (it needs the CUDA toolkit and nccl.h at build time)")


def topology_dir() -> pathlib.Path:
    """The bundled topologies: inside the package, else the checkout's topologies/."""
    installed = PACKAGE / "topologies"
    return installed if installed.is_dir() else CHECKOUT / "topologies"


def installed() -> bool:
    """Whether this braid runs from an installed package (not a source checkout)."""
    return (PACKAGE / "bin").is_dir() or (PACKAGE / "lib").is_dir()
