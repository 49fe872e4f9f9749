"""The machine a benchmark ran on, recorded beside every figure so numbers are never read out of context."""

from __future__ import annotations

import os
import platform
import sys
from functools import lru_cache
from importlib.util import find_spec
from pathlib import Path
from typing import Any


def _cpu_model() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.lower().startswith(("model name", "hardware", "processor\t: ")) and ":" in line:
                value = line.split(":", 1)[1].strip()
                if value and not value.isdigit():
                    return value
    return platform.processor() or platform.machine() or "unknown"


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@lru_cache(maxsize=1)
def machine() -> dict[str, Any]:
    """CPU count and model, OS, Python, and whether torch (and CUDA) is present."""
    info: dict[str, Any] = {
        "cpu_count": os.cpu_count() or 1,
        "usable_cpus": _usable_cpus(),
        "cpu_model": _cpu_model(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "torch": None,
        "cuda": False,
    }
    if find_spec("torch") is not None:
        try:
            import torch

            info["torch"] = torch.__version__
            info["cuda"] = bool(torch.cuda.is_available())
            if info["cuda"]:
                info["gpu"] = torch.cuda.get_device_name(0)
        except Exception as exc:  # a broken torch install is a fact about the machine, not a crash
            info["torch"] = f"unusable ({type(exc).__name__})"
    return info
