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

import asyncio
import hashlib
import json
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from umni.util import jsontext
from umni.util.secrets import scrub

__all__ = ["ResultStore", "StoredRow", "Write", "Batches", "row_checksum", "encode_output", "decode_row", "encode_write"]


def row_checksum(*fields: Any) -> str:
    """sha256 over a row's fields, each length-prefixed so no two rows can share one by shifting text."""
    digest = hashlib.sha256()
    for value in fields:
        data = str(value).encode()
        digest.update(f"{len(data)}:".encode() + data)
    return digest.hexdigest()


_PROVENANCE = json.JSONEncoder(sort_keys=True)


def encode_output(output: Mapping[str, Any]) -> str:
    """The stored text of an output; no credential ever reaches a store."""
    return scrub(jsontext.dumps(output))


@dataclass(frozen=True)
class Write:
    """One result on its way to a store, already encoded (on the caller's thread)."""

    key: str
    kind: str
    text: str
    provenance: str | None
    replace: bool = False


#: The provenance mapping last encoded and its text: a cache passes the same (never mutated)
#: mapping with every write of a backend, so it is encoded once, not once per result.
_last_provenance: tuple[Mapping[str, Any], str] | None = None


def encode_write(
    key: str, kind: str, output: Mapping[str, Any], provenance: Mapping[str, Any] | None, replace: bool = False
) -> Write:
    global _last_provenance
    text = None
    if provenance:
        last = _last_provenance
        if last is not None and last[0] is provenance:
            text = last[1]
        else:
            text = _PROVENANCE.encode(dict(provenance))
            _last_provenance = (provenance, text)
    return Write(key, kind, encode_output(output), text, replace)


def decode_row(key: str, kind: str, text: str, checksum: str | None) -> dict[str, Any] | None:
    """The output of a verified row, or None for a row that fails its checksum (a miss)."""
    if checksum != row_checksum(key, kind, text):
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError:  # cannot happen with a matching checksum, but never crash on a cache
        return None
    return value if isinstance(value, dict) else None


#: The query behind `ResultStore.tally` (``{table}``: the backend's table name).
TALLY = "SELECT kind, provenance, COUNT(*), MIN(created), MAX(created) FROM {table} GROUP BY kind, provenance"


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

    def tally(self) -> list[tuple[str, str | None, int, float, float]]:
        """(kind, provenance, results, first and last write time) per distinct pair."""
        ...

    def structure_errors(self) -> list[str]:
        """Damage the store itself can detect below the row level (SQLite's integrity_check)."""
        ...

    def close_now(self) -> None: ...


def chunks(items: Sequence[str], size: int = 500) -> Iterable[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


ItemT = TypeVar("ItemT")
ResultT = TypeVar("ResultT")


class Batches(Generic[ItemT, ResultT]):
    """Requests made while a batch is out go together in the next one.

    One task per event loop hands `handle` up to `max_batch` queued items at a time, until none is
    left; each caller awaits its own result. A store's writes (one commit per burst of finished
    nodes) and PostgreSQL's reads (one round trip per wave of lookups) both work this way. A failure
    of a batch reaches every caller in it, so no caller is left waiting. Per loop, because a store
    may be used from several event loops one after another (the synchronous API runs its own).
    """

    def __init__(self, handle: Callable[[list[ItemT]], Awaitable[list[ResultT]]], max_batch: int) -> None:
        self._handle = handle
        self._max_batch = max_batch
        self._queued: dict[asyncio.AbstractEventLoop, list[tuple[ItemT, asyncio.Future[ResultT]]]] = {}
        self._tasks: dict[asyncio.AbstractEventLoop, asyncio.Task[None]] = {}

    async def submit(self, item: ItemT) -> ResultT:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[ResultT] = loop.create_future()
        self._queued.setdefault(loop, []).append((item, done))
        task = self._tasks.get(loop)
        if task is None or task.done():
            self._tasks[loop] = loop.create_task(self._run(loop))
        return await done

    async def _run(self, loop: asyncio.AbstractEventLoop) -> None:
        queued = self._queued.setdefault(loop, [])
        while queued:
            batch = queued[: self._max_batch]
            del queued[: self._max_batch]
            try:
                results = await self._handle([item for item, _ in batch])
            except BaseException as exc:
                for _, done in batch:
                    if not done.done():
                        done.set_exception(exc)
                if not isinstance(exc, Exception):
                    raise
                continue
            for (_, done), result in zip(batch, results):
                if not done.done():
                    done.set_result(result)

    async def drain(self) -> None:
        """Wait until this loop's queue is handled (before closing the store)."""
        task = self._tasks.pop(asyncio.get_running_loop(), None)
        if task is not None and not task.done():
            await task
