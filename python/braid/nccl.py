"""The real NCCL the drop-in would forward to, found in the order src/nccl/real.cpp uses.

libbraid.so takes BRAID_NCCL_LIBRARY when set, else the libnccl.so.2 the application has loaded
already (under PyTorch: the one its libtorch_cuda.so links, PyTorch's own `nvidia-nccl` wheel),
else libnccl.so.2 from the loader's search path. Here the second is PyTorch's NCCL when PyTorch's
NCCL wheel is installed. Its version comes from ncclGetVersion, as the drop-in logs it.
"""

import ctypes
import dataclasses
import importlib.util
import os
import pathlib
from typing import Optional


@dataclasses.dataclass
class RealNccl:
    path: Optional[str]  # None when no NCCL was found
    how: str             # how it was found, or why none was
    version: Optional[int] = None  # ncclGetVersion's code, e.g. 22809

    def version_text(self) -> str:
        if not self.version:
            return "unknown"
        v = self.version
        return f"{v // 10000}.{v // 100 % 100}.{v % 100}"


def pytorch_nccl() -> Optional[str]:
    """libnccl.so.2 of PyTorch's NCCL wheel (nvidia-nccl-cu*), located without importing torch."""
    try:
        spec = importlib.util.find_spec("nvidia.nccl")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        candidate = pathlib.Path(folder) / "lib" / "libnccl.so.2"
        if candidate.is_file():
            return str(candidate)
    return None


def _loaded_path(name_fragment: str) -> Optional[str]:
    """Path of a shared library this process has mapped, from /proc/self/maps."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split()
                if len(fields) >= 6 and name_fragment in os.path.basename(fields[5]):
                    return fields[5]
    except OSError:
        pass
    return None


def nccl_version(library: str) -> Optional[int]:
    """ncclGetVersion of `library` (a path or a soname); None when it cannot be loaded or asked."""
    try:
        lib = ctypes.CDLL(library, mode=os.RTLD_LOCAL | os.RTLD_LAZY)
        get_version = lib.ncclGetVersion
    except (OSError, AttributeError):
        return None
    code = ctypes.c_int(0)
    get_version.argtypes = [ctypes.POINTER(ctypes.c_int)]
    return code.value if get_version(ctypes.byref(code)) == 0 else None


def find_real_nccl(environ=None) -> RealNccl:
    env = os.environ if environ is None else environ
    configured = env.get("BRAID_NCCL_LIBRARY")
    if configured:
        version = nccl_version(configured)
        how = "BRAID_NCCL_LIBRARY" if version else "BRAID_NCCL_LIBRARY (cannot be loaded or is no NCCL)"
        return RealNccl(configured if version else None, how, version)
    torch_nccl = pytorch_nccl()
    if torch_nccl:
        return RealNccl(torch_nccl, "PyTorch's NCCL wheel (what the application loads)", nccl_version(torch_nccl))
    version = nccl_version("libnccl.so.2")
    if version:
        return RealNccl(_loaded_path("libnccl.so") or "libnccl.so.2", "the loader's search path", version)
    return RealNccl(None, "none: no BRAID_NCCL_LIBRARY, no PyTorch NCCL wheel, no libnccl.so.2 on the loader's path")


def library_dir_env(real: RealNccl, environ=None) -> dict:
    """LD_LIBRARY_PATH with the real NCCL's folder first, for braid's tools that link libnccl.so.2
    (braid-bench): on a PyTorch machine NCCL lives inside a wheel the loader does not search."""
    env = dict(os.environ if environ is None else environ)
    if real.path and os.path.isabs(real.path):
        folder = os.path.dirname(real.path)
        parts = [p for p in env.get("LD_LIBRARY_PATH", "").split(":") if p]
        if folder not in parts:
            env["LD_LIBRARY_PATH"] = ":".join([folder] + parts)
    return env
