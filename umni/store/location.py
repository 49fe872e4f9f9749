"""Where the shared result store lives when a run names none: `UMNI_CACHE`, else the user cache
directory. Storage owns its own default, so opening a store never reaches up into run orchestration."""

from __future__ import annotations

import os
from pathlib import Path


def default_cache_dir() -> Path:
    env = os.environ.get("UMNI_CACHE")
    if env:
        return Path(env)
    import platformdirs  # here: a store given by name or by UMNI_CACHE never needs it

    return Path(platformdirs.user_cache_dir("umni"))
