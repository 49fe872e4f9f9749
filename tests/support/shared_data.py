"""The real benchmark files kept beside the repository (``../shared/data``), found from this file's
location so no test names a machine path. A missing file fails the test that needs it: a silent skip
would hide that the real-data checks never ran."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"


def shared_data(*parts: str) -> Path:
    """The path of a real data file under ``../shared/data``; fails the calling test if it is absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.fail(f"real data file {path} is missing: the repository expects ../shared/data beside it")
    return path
