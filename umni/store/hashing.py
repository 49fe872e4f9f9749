"""Content hashes of values: how the cache tells whether a node's inputs changed.

A value is hashed through its canonical JSON text (sorted keys, no spaces), so equal values give
equal hashes whatever order their dicts were built in; every stored cache key depends on that text.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from umni.util import jsontext


def _encode(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot fingerprint a value of type {type(value).__name__}")


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no spaces: equal values give equal text, so equal hashes. The text
    of `json.dumps` with those options (every existing key depends on it), made fast (`umni.util.jsontext`)."""
    return jsontext.canonical(value, _encode)


def fingerprint(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()
