"""Persistent state: the shared result cache and the per-run record of finished cases.

The cache is a `ResultStore` chosen by URL (umni/stores: SQLite by default, PostgreSQL for many
machines) plus a blob store for images; a result is acknowledged once committed, so a crash loses at
most the nodes that were running. Several processes may share one cache. Only successful results
are ever cached. run.db is a SQLite file in WAL mode inside the run directory.

Every row carries a sha256 of its contents, checked on every read (`PRAGMA integrity_check` sees
only the file's structure, not a flipped byte inside a value): in the cache a row that fails is a
miss and is replaced; in run.db it is a refusal naming the file, since a run's results cannot be
recomputed silently. Disk faults (full, read-only, no permission, damaged file) raise StorageError.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Container, Iterator
from pathlib import Path
from typing import Any, cast

from umni.store.location import default_cache_dir
from umni.store.locks import FileLocks, FolderLocks
from umni.store.results import row_checksum
from umni.store.runfolder import CaseRecord, Totals
from umni.store.sqlite import SCHEMA_VERSION, SqliteResults, connect
from umni.store.urls import describe, open_blobs, open_results, process_provenance
from umni.util.errors import StorageError
from umni.util.secrets import scrub
from umni.util.storage import storage_guard

__all__ = ["Cache", "RunStore", "row_checksum", "SCHEMA_VERSION"]


def _connect(path: Path) -> sqlite3.Connection:
    return connect(path)


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


class Cache:
    """Node results by cache key (a `ResultStore` chosen by URL), plus the image blobs they reference.

    `location` is a directory (as before: cache.db and blobs/ inside), ``sqlite:///…`` or
    ``postgresql://…`` (see `umni.stores`); `blobs` overrides where images live (a directory or
    ``file:///dir``). The runner uses the async methods (`lookup`, `lookup_many`, `store`); the
    synchronous `get`/`put`/`forget` remain for code outside an event loop.
    """

    def __init__(self, location: str | Path, blobs: str | Path | None = None) -> None:
        self.results, implied = open_results(location)
        self.location = describe(location)
        #: where run-folder locks and sweep unit claims are held: in the database for a PostgreSQL
        #: store, else file locks (a store may offer its own as `locks`)
        self.locks: FolderLocks = getattr(self.results, "locks", None) or FileLocks()
        if isinstance(self.results, SqliteResults):
            self.path = self.results.path
            self.root = self.path.parent
            self.db = self.results.db  # the read connection, for inspection
        if blobs is None:
            if implied is None:

                implied = default_cache_dir() / "blobs"
            blobs = implied
        self.blobs = open_blobs(blobs)
        #: stored with every result, never part of a key (see umni.stores.provenance)
        self.provenance = process_provenance()
        self._by_backend: dict[int, tuple[Any, dict[str, Any]]] = {}

    # -- async: what the runner calls, so a network store never stalls scheduling
    @property
    def inline_reads(self) -> bool:
        """Whether a lookup is cheap enough to make on the scheduling path: a local row (SQLite) whose
        image is checked locally. A network result store or blob store is read in a task instead
        (`lookup`, and the image check in a thread), so it never holds up scheduling."""
        return bool(getattr(self.results, "inline_reads", False)) and self.blobs.inline_checks

    async def lookup(self, key: str) -> dict[str, Any] | None:
        return await self.results.get(key)

    async def lookup_many(self, keys: list[str]) -> dict[str, dict[str, Any]]:
        return await self.results.get_many(keys)

    async def store(
        self, key: str, kind: str, output: dict[str, Any], *, replace: bool = False, backend: Any = None
    ) -> dict[str, Any]:
        """Store `output` unless another process already stored this key; the winner comes back.
        `replace` overwrites instead (a node that does not read the cache refreshes its row).
        `backend`, the one that made it, adds its spec and device to the row's provenance."""
        provenance = self.provenance if backend is None else self._backend_provenance(backend)
        if replace:
            return await asyncio.to_thread(self.results.put_now, key, kind, output, replace=True, provenance=provenance)
        return await self.results.put_if_absent(key, kind, output, provenance)

    def _backend_provenance(self, backend: Any) -> dict[str, Any]:
        """The process's provenance plus the backend's spec, device and dtype (a process may hold
        models on several devices); made once per backend."""
        made = self._by_backend.get(id(backend))
        if made is None or made[0] is not backend:
            info = dict(self.provenance)
            info["backend"] = scrub(str(getattr(backend, "spec", type(backend).__name__)))  # no URL credentials
            for name in ("device", "dtype"):
                value = getattr(backend, name, None)
                if value is not None:
                    info[name] = str(value)
            made = self._by_backend[id(backend)] = (backend, info)
        return made[1]

    # -- synchronous API (tests, tools, code outside an event loop)
    def get(self, key: str) -> dict[str, Any] | None:
        """The cached output, or None; a row whose checksum fails (damaged, or from an older
        version) is a miss, and the next `put` replaces it."""
        return self.results.get_now(key)

    def get_many(self, keys: list[str]) -> dict[str, dict[str, Any]]:
        """The cached outputs of those of `keys` that are stored (misses and failed checksums are
        absent), in one query where the store can (the runner reads a wave of ready nodes at once)."""
        many = getattr(self.results, "get_many_now", None)
        if many is not None:
            return dict(many(keys))
        return {key: hit for key in dict.fromkeys(keys) if (hit := self.results.get_now(key)) is not None}

    def put(self, key: str, kind: str, output: dict[str, Any]) -> None:
        self.results.put_now(key, kind, output, replace=True, provenance=self.provenance)

    def put_if_absent(self, key: str, kind: str, output: dict[str, Any]) -> dict[str, Any]:
        return self.results.put_now(key, kind, output, provenance=self.provenance)

    def forget(self, key: str) -> None:
        self.results.forget_now(key)

    def integrity_errors(self) -> list[str]:
        """Problems a crash could have caused: a damaged database or row, or a result whose image is gone."""
        problems = self.results.structure_errors()
        for row in self.results.rows():
            if row.checksum != row_checksum(row.key, row.kind, row.output):
                problems.append(f"result {row.key[:12]} fails its checksum")
                continue
            for sha in _image_hashes(json.loads(row.output)):
                if not self.blobs.exists(sha):
                    problems.append(f"result {row.key[:12]} references missing image {sha[:12]}")
                elif not self.blobs.verify(sha):
                    problems.append(f"result {row.key[:12]} references damaged image {sha[:12]}")
        return problems

    def close(self) -> None:
        self.results.close_now()


def _image_hashes(value: Any) -> list[str]:
    if isinstance(value, dict):
        if set(value) >= {"sha256", "width", "height"}:
            return [value["sha256"]]
        return [h for v in value.values() for h in _image_hashes(v)]
    if isinstance(value, list):
        return [h for v in value for h in _image_hashes(v)]
    return []


class RunStore:
    """The finished cases of one run directory, one row per case (so re-runs never duplicate)."""

    SCHEMA = """
    CREATE TABLE IF NOT EXISTS cases (
        case_id TEXT PRIMARY KEY,
        position INTEGER NOT NULL,
        complete INTEGER NOT NULL,
        record TEXT NOT NULL,
        checksum TEXT NOT NULL
    )"""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.db = _connect(self.path)
        with storage_guard(self.path):
            tables = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if "cases" in tables and "checksum" not in _columns(self.db, "cases"):
                self.db.close()
                raise StorageError(
                    "run.db was written by an older umni without row checksums, so its results cannot be "
                    "verified; run again into a new --out (the cache still saves the work)",
                    path=self.path,
                )
            self.db.execute(self.SCHEMA)
            self.db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def put(self, case_id: str, position: int, record: CaseRecord, complete: bool) -> None:
        text = scrub(json.dumps(record, ensure_ascii=False))
        with storage_guard(self.path):
            self.db.execute(
                "INSERT OR REPLACE INTO cases(case_id, position, complete, record, checksum) VALUES (?,?,?,?,?)",
                (case_id, position, int(complete), text, row_checksum(case_id, position, int(complete), text)),
            )

    def _each_row(self) -> Iterator[tuple[str, int, int, str]]:
        """The rows in position order, each verified as it is read (a 20k-case run's records are
        never all in memory at once); one that fails its checksum raises, naming the file."""
        with storage_guard(self.path):
            rows = self.db.execute("SELECT case_id, position, complete, record, checksum FROM cases ORDER BY position")
            for case_id, position, complete, record, checksum in rows:
                if checksum != row_checksum(case_id, position, complete, record):
                    raise StorageError(
                        f"the row of case {case_id!r} fails its checksum (the file was changed or damaged after "
                        "umni wrote it); its results cannot be trusted: run again into a new --out",
                        path=self.path,
                    )
                yield case_id, position, complete, record

    def complete_ids(self) -> set[str]:
        return {case_id for case_id, _, complete, _ in self._each_row() if complete}

    # The command that made this run.db, kept inside it (not only in run.json beside it), so a
    # directory whose run.json was deleted cannot be resumed by another command.
    def made_by(self) -> str | None:
        with storage_guard(self.path):
            self.db.execute(
                "CREATE TABLE IF NOT EXISTS made_by (id INTEGER PRIMARY KEY CHECK (id = 1), identity TEXT NOT NULL)"
            )
            row = self.db.execute("SELECT identity FROM made_by WHERE id = 1").fetchone()
        return row[0] if row else None

    def set_made_by(self, identity: str) -> None:
        with storage_guard(self.path):
            self.db.execute(
                "CREATE TABLE IF NOT EXISTS made_by (id INTEGER PRIMARY KEY CHECK (id = 1), identity TEXT NOT NULL)"
            )
            self.db.execute("INSERT OR REPLACE INTO made_by(id, identity) VALUES (1, ?)", (identity,))

    def cumulative(self) -> Totals:
        """Calls and usage of every earlier invocation into this directory ({} for a new one)."""
        with storage_guard(self.path):
            self.db.execute(
                "CREATE TABLE IF NOT EXISTS totals (id INTEGER PRIMARY KEY CHECK (id = 1), totals TEXT NOT NULL)"
            )
            row = self.db.execute("SELECT totals FROM totals WHERE id = 1").fetchone()
        return json.loads(row[0]) if row else {}

    def set_cumulative(self, totals: Totals) -> None:
        with storage_guard(self.path):
            self.db.execute(
                "CREATE TABLE IF NOT EXISTS totals (id INTEGER PRIMARY KEY CHECK (id = 1), totals TEXT NOT NULL)"
            )
            self.db.execute(
                "INSERT OR REPLACE INTO totals(id, totals) VALUES (1, ?)", (json.dumps(totals, sort_keys=True),)
            )

    def has_rows(self) -> bool:
        with storage_guard(self.path):
            return self.db.execute("SELECT 1 FROM cases LIMIT 1").fetchone() is not None

    def records(self) -> list[CaseRecord]:
        return list(self.each_record())

    def each_record(self) -> Iterator[CaseRecord]:
        """The records one at a time, in position order, each verified as it is read."""
        for *_, record in self._each_row():
            yield json.loads(record)

    def records_of(self, ids: Container[str], *, without: tuple[str, ...] = ()) -> StoredRecords:
        """The records of the cases in `ids`, less the fields `without`, read anew on each pass."""
        return StoredRecords(self, ids, without)

    def close(self) -> None:
        self.db.close()


class StoredRecords:
    """Some cases' records as an iterable that reads them from run.db on every pass, one at a time.

    A finished run reads its records a few times (summary, report, viewer files); held as a list,
    20,000 UmniBench records took over 300 MB, more than all the rest of the run."""

    def __init__(self, store: RunStore, ids: Container[str], without: tuple[str, ...]) -> None:
        self.store = store
        self.ids = ids
        self.without = without

    def __iter__(self) -> Iterator[CaseRecord]:
        for record in self.store.each_record():
            if record.get("case_id") in self.ids:
                fields = cast(dict[str, Any], record)  # a protocol's record: more fields than CaseRecord names
                for name in self.without:
                    fields.pop(name, None)
                yield record
