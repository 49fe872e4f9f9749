"""Where and with what a result was computed: stored beside each result, never part of its key.

Two runs of the same node on different machines, thread counts or batch sizes can differ in the
last float digit; the key says the result is the same computation, the provenance says where this
copy came from, so such a difference can be traced instead of guessed at.
"""

from __future__ import annotations

import os
import platform
import socket
import sys
from functools import lru_cache
from importlib import metadata
from typing import Any

__all__ = ["process_provenance"]

#: Libraries whose versions change numerics; a version is recorded only when the library is loaded
#: (importing torch just to name its version would cost seconds).
_LIBRARIES = ("torch", "transformers", "diffusers", "accelerate", "numpy", "PIL", "openai")


def _version(module: str) -> str | None:
    loaded = sys.modules.get(module)
    if loaded is None:
        return None
    version = getattr(loaded, "__version__", None)
    if version is None:
        try:
            version = metadata.version(module)
        except metadata.PackageNotFoundError:
            return None
    return str(version)


@lru_cache(maxsize=1)
def _static() -> dict[str, Any]:
    try:
        umni_version = metadata.version("umni")
    except metadata.PackageNotFoundError:
        umni_version = "unknown"
    return {
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "umni": umni_version,
    }


def process_provenance() -> dict[str, Any]:
    """This process's provenance now (libraries loaded since the last call are included)."""
    info = dict(_static())
    info["pid"] = os.getpid()  # with the host, which process wrote a result (`umni status STORE`)
    info["libraries"] = {name: v for name in _LIBRARIES if (v := _version(name)) is not None}
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            info["torch_threads"] = int(torch.get_num_threads())
            if torch.cuda.is_available():
                info["device"] = torch.cuda.get_device_name(torch.cuda.current_device())
        except Exception:  # provenance is informational: never fail a write over it
            pass
    info.setdefault("device", "cpu")
    slurm = os.environ.get("SLURM_JOB_ID")
    if slurm:
        info["slurm_job"] = slurm
    return info
