"""The result store interface: node outputs by cache key, shared by every process of a run.

The interface is async so that a network store (PostgreSQL) never stalls the scheduler; a store
chosen by URL (`umni.stores.open_results`) implements it. Only successful outputs are stored.

Semantics every implementation keeps:
* a row carries a sha256 over (key, kind, output) (`row_checksum`); a row that fails it reads as a
  miss and the next write replaces it;
* `put_if_absent` never overwrites a good row: when two processes compute the same key, the first
  row written wins and both continue with it, so everything downstream sees one value;
* provenance (host, device, library versions, threads) is stored beside the output, never in the
  key: 1 vs 2 torch threads can change a float in the last place for the same key;
* a disk or server fault raises `StorageError` (never a node outcome).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..secrets import scrub

__all__ = ["ResultStore", "StoredRow", "row_checksum", "encode_output", "decode_row"]


def row_checksum(*fields: Any) -> str:
    """sha256 over a row's fields, each length-prefixed so no two rows can share one by shifting text."""
    digest = hashlib.sha256()
    for value in fields:
        data = str(value).encode()
        digest.update(f"{len(data)}:".encode() + data)
    return digest.hexdigest()


def encode_output(output: Mapping[str, Any]) -> str:
    """The stored text of an output; no credential ever reaches a store."""
    return scrub(json.dumps(output, ensure_ascii=False))


def decode_row(key: str, kind: str, text: str, checksum: str | None) -> dict[str, Any] | None:
    """The output of a verified row, or None for a row that fails its checksum (a miss)."""
    if checksum != row_checksum(key, kind, text):
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError:  # cannot happen with a matching checksum, but never crash on a cache
        return None
    return value if isinstance(value, dict) else None


@dataclass(frozen=True)
class StoredRow:
    """One row as stored, for integrity checks and inspection (not verified)."""

    key: str
    kind: str
    output: str
    checksum: str | None
    provenance: str | None


@runtime_checkable
class ResultStore(Protocol):
    """Where node results live. `url` names it without credentials (for messages and run.json)."""

    url: str

    async def get(self, key: str) -> dict[str, Any] | None:
        """The verified output stored under `key`, or None."""
        ...

    async def get_many(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The verified outputs of those of `keys` that are stored (misses are absent)."""
        ...

    async def put_if_absent(
        self, key: str, kind: str, output: Mapping[str, Any], provenance: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """Store `output` unless a verified row exists; return the row that won (use it downstream)."""
        ...

    async def forget(self, key: str) -> None: ...

    async def close(self) -> None: ...

    # Synchronous twins, for code outside an event loop (tests, `umni check`, the legacy `Cache` API).
    def get_now(self, key: str) -> dict[str, Any] | None: ...

    def put_now(
        self,
        key: str,
        kind: str,
        output: Mapping[str, Any],
        *,
        replace: bool = False,
        provenance: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]: ...

    def forget_now(self, key: str) -> None: ...

    def rows(self) -> Iterator[StoredRow]: ...

    def structure_errors(self) -> list[str]:
        """Damage the store itself can detect below the row level (SQLite's integrity_check)."""
        ...

    def close_now(self) -> None: ...


def chunks(items: Sequence[str], size: int = 500) -> Iterable[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
