"""Persistent state: the shared result cache and the per-run record of finished cases.

Both are SQLite databases in WAL mode, written by one connection per process (the runner's event
loop), committed after every result so a crash loses at most the node that was running. Several
processes may share one cache: SQLite serialises their writers and `busy_timeout` makes a writer
wait instead of failing. Only successful results are ever cached.

Every row carries a sha256 of its contents, checked on every read (`PRAGMA integrity_check` sees
only the file's structure, not a flipped byte inside a value): in the cache a row that fails is a
miss and is replaced; in run.db it is a refusal naming the file, since a run's results cannot be
recomputed silently. Disk faults (full, read-only, no permission, damaged file) raise StorageError.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from .artifacts import BlobStore
from .errors import StorageError
from .secrets import scrub
from .storage import storage_guard, touch_with_umask

#: `PRAGMA user_version` of the databases this version writes (rows carry a checksum).
SCHEMA_VERSION = 1


def row_checksum(*fields: Any) -> str:
    """sha256 over a row's fields, each length-prefixed so no two rows can share one by shifting text."""
    digest = hashlib.sha256()
    for value in fields:
        data = str(value).encode()
        digest.update(f"{len(data)}:".encode() + data)
    return digest.hexdigest()


def _connect(path: Path) -> sqlite3.Connection:
    with storage_guard(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        touch_with_umask(path)
        conn = sqlite3.connect(path, timeout=60.0, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA busy_timeout=60000")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        return conn


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


class Cache:
    """Node results by cache key, plus the image blobs they reference."""

    SCHEMA = """
    CREATE TABLE IF NOT EXISTS results (
        key TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        output TEXT NOT NULL,
        created REAL NOT NULL,
        checksum TEXT
    )"""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.path = self.root / "cache.db"
        self.blobs = BlobStore(self.root / "blobs")
        self.db = _connect(self.path)
        with self._guard():
            self.db.execute(self.SCHEMA)
            if "checksum" not in _columns(self.db, "results"):
                # a cache from before row checksums: its rows cannot be verified, so they read as
                # misses and are replaced as the nodes run again
                self.db.execute("ALTER TABLE results ADD COLUMN checksum TEXT")
            self.db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def _guard(self) -> Any:
        return storage_guard(self.path)

    def get(self, key: str) -> dict[str, Any] | None:
        """The cached output, or None; a row whose checksum fails (damaged, or from an older
        version) is a miss, and the next `put` replaces it."""
        with self._guard():
            row = self.db.execute("SELECT kind, output, checksum FROM results WHERE key=?", (key,)).fetchone()
        if row is None or row[2] != row_checksum(key, row[0], row[1]):
            return None
        try:
            return json.loads(row[1])
        except json.JSONDecodeError:  # cannot happen with a matching checksum, but never crash on a cache
            return None

    def put(self, key: str, kind: str, output: dict[str, Any]) -> None:
        text = scrub(json.dumps(output, ensure_ascii=False))  # no credential ever reaches the disk
        with self._guard():
            self.db.execute(
                "INSERT OR REPLACE INTO results(key, kind, output, created, checksum) VALUES (?,?,?,?,?)",
                (key, kind, text, time.time(), row_checksum(key, kind, text)),
            )

    def forget(self, key: str) -> None:
        with self._guard():
            self.db.execute("DELETE FROM results WHERE key=?", (key,))

    def integrity_errors(self) -> list[str]:
        """Problems a crash could have caused: a damaged database or row, or a result whose image is gone."""
        problems = [r[0] for r in self.db.execute("PRAGMA integrity_check") if r[0] != "ok"]
        for key, kind, output, checksum in self.db.execute("SELECT key, kind, output, checksum FROM results"):
            if checksum != row_checksum(key, kind, output):
                problems.append(f"result {key[:12]} fails its checksum")
                continue
            for sha in _image_hashes(json.loads(output)):
                if not self.blobs.path(sha).exists():
                    problems.append(f"result {key[:12]} references missing image {sha[:12]}")
                elif not self.blobs.verify(sha):
                    problems.append(f"result {key[:12]} references damaged image {sha[:12]}")
        return problems

    def close(self) -> None:
        self.db.close()


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

    def put(self, case_id: str, position: int, record: dict[str, Any], complete: bool) -> None:
        text = scrub(json.dumps(record, ensure_ascii=False))
        with storage_guard(self.path):
            self.db.execute(
                "INSERT OR REPLACE INTO cases(case_id, position, complete, record, checksum) VALUES (?,?,?,?,?)",
                (case_id, position, int(complete), text, row_checksum(case_id, position, int(complete), text)),
            )

    def _rows(self) -> list[tuple[str, int, int, str]]:
        """Every row, verified; one that fails its checksum stops everything, naming the file."""
        with storage_guard(self.path):
            rows = self.db.execute("SELECT case_id, position, complete, record, checksum FROM cases ORDER BY position").fetchall()
        for case_id, position, complete, record, checksum in rows:
            if checksum != row_checksum(case_id, position, complete, record):
                raise StorageError(
                    f"the row of case {case_id!r} fails its checksum (the file was changed or damaged after "
                    "umni wrote it); its results cannot be trusted: run again into a new --out",
                    path=self.path,
                )
        return [row[:4] for row in rows]

    def complete_ids(self) -> set[str]:
        return {case_id for case_id, _, complete, _ in self._rows() if complete}

    # The command that made this run.db, kept inside it (not only in run.json beside it), so a
    # directory whose run.json was deleted cannot be resumed by another command.
    def made_by(self) -> str | None:
        with storage_guard(self.path):
            self.db.execute("CREATE TABLE IF NOT EXISTS made_by (id INTEGER PRIMARY KEY CHECK (id = 1), identity TEXT NOT NULL)")
            row = self.db.execute("SELECT identity FROM made_by WHERE id = 1").fetchone()
        return row[0] if row else None

    def set_made_by(self, identity: str) -> None:
        with storage_guard(self.path):
            self.db.execute("CREATE TABLE IF NOT EXISTS made_by (id INTEGER PRIMARY KEY CHECK (id = 1), identity TEXT NOT NULL)")
            self.db.execute("INSERT OR REPLACE INTO made_by(id, identity) VALUES (1, ?)", (identity,))

    def cumulative(self) -> dict[str, Any]:
        """Calls and usage of every earlier invocation into this directory ({} for a new one)."""
        with storage_guard(self.path):
            self.db.execute("CREATE TABLE IF NOT EXISTS totals (id INTEGER PRIMARY KEY CHECK (id = 1), totals TEXT NOT NULL)")
            row = self.db.execute("SELECT totals FROM totals WHERE id = 1").fetchone()
        return json.loads(row[0]) if row else {}

    def set_cumulative(self, totals: dict[str, Any]) -> None:
        with storage_guard(self.path):
            self.db.execute("CREATE TABLE IF NOT EXISTS totals (id INTEGER PRIMARY KEY CHECK (id = 1), totals TEXT NOT NULL)")
            self.db.execute("INSERT OR REPLACE INTO totals(id, totals) VALUES (1, ?)", (json.dumps(totals, sort_keys=True),))

    def has_rows(self) -> bool:
        with storage_guard(self.path):
            return self.db.execute("SELECT 1 FROM cases LIMIT 1").fetchone() is not None

    def records(self) -> list[dict[str, Any]]:
        return [json.loads(record) for *_, record in self._rows()]

    def close(self) -> None:
        self.db.close()
