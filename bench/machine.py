"""The machine a benchmark ran on, recorded beside every figure so numbers are never read out of context."""

from __future__ import annotations

import os
import platform
import sys
import time
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


#: Iterations of the calibration loop: about a tenth of a second on an idle current core.
CALIBRATION_ITERATIONS = 2_000_000


def _calibration_loop(n: int) -> int:
    total = 0
    for i in range(n):
        total += i * i % 7
    return total


def calibrate(repeats: int = 3) -> float:
    """Seconds a fixed pure-Python loop takes here (best of `repeats`): printed beside the results, so
    figures from another day or machine can be scaled, and a loaded machine shows as a slow one."""
    best = float("inf")
    for _ in range(repeats):
        began = time.perf_counter()
        _calibration_loop(CALIBRATION_ITERATIONS)
        best = min(best, time.perf_counter() - began)
    return best


def calibration_line(calibration: dict[str, float]) -> str:
    parts = [f"{label.replace('_seconds', '')}: {seconds * 1000:.0f} ms" for label, seconds in calibration.items()]
    return f"calibration (pure-Python loop of {CALIBRATION_ITERATIONS:,} iterations, best of 3): " + ", ".join(parts)


def cpu_seconds() -> float:
    """CPU seconds of this process (every thread) and of the child processes it has waited for."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def emit(result: dict[str, Any], json_path: Path | None) -> int:
    """A standalone benchmark's result with the machine it ran on: printed, and written to
    `json_path` when given; returns the exit code (0)."""
    import json

    text = json.dumps(result | {"machine": machine()}, indent=2)
    print(text)
    if json_path:
        json_path.write_text(text + "\n")
    return 0
