"""Test helpers the benchmarks reuse from the repository checkout (tests/ is not an installed package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def load_repo_module(relative: str, name: str, needed_by: str) -> Any:
    """Import the file at `relative` (from the repository root) as module `name`."""
    path = REPO / relative
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None or not path.exists():
        raise FileNotFoundError(f"{path} is missing; {needed_by} needs the repository checkout")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
