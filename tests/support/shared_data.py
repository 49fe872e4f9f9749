"""The benchmarks' own files (the real AEGIS annotation, the real WISE sets), which the repository does
not ship. Their folder is one setting, ``UMNI_BENCH_DATA``, by default ``../shared/data`` beside the
repository root, so no test names a machine path.

Tests that read them run whenever the files are there. On a clone without them those tests are
skipped, all with the same reason (the absent files and the setting), and tests/conftest.py gives
those skips one location, so pytest's summary shows them as one line: a bare clone passes, and still
says which checks did not run.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SETTING = "UMNI_BENCH_DATA"
REPO = Path(__file__).resolve().parents[2]
DEFAULT = REPO.parent / "shared" / "data"
#: What the tests read, relative to the folder; named in the skip reason when absent.
BENCH_FILES = ("aegis/annotation.json", "wise/legacy", "wise/verified")
#: How every such skip reason begins (tests/conftest.py folds them into one summary line).
ABSENT = "benchmark files absent from"


def bench_data_root() -> Path:
    """The folder ``UMNI_BENCH_DATA`` names (relative to the working directory), else the default."""
    value = os.environ.get(SETTING)
    return Path(value).resolve() if value else DEFAULT


def absent_files() -> list[str]:
    """The entries of `BENCH_FILES` missing from the folder."""
    root = bench_data_root()
    return [name for name in BENCH_FILES if not (root / name).exists()]


def shared_data(*parts: str) -> Path:
    """The path of a benchmark file under the folder; skips the calling test when it is absent."""
    root = bench_data_root()
    path = root.joinpath(*parts)
    if not path.exists():
        wanted = "/".join(parts)
        absent = absent_files()
        if not any(wanted == name or wanted.startswith(name + "/") or name.startswith(wanted + "/") for name in absent):
            absent.append(wanted)
        pytest.skip(f"{ABSENT} {root} ({SETTING}): {', '.join(absent)}")
    return path
