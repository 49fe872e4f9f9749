"""Persistent state: the shared result cache and the per-run record of finished cases.

Both are SQLite databases in WAL mode, written by one connection per process (the runner's event
loop), committed after every result so a crash loses at most the node that was running. Several
processes may share one cache: SQLite serialises their writers and `busy_timeout` makes a writer
wait instead of failing. Only successful results are ever cached.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from .artifacts import BlobStore


def _connect(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=60.0, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout=60000")
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    return conn


class Cache:
    """Node results by cache key, plus the image blobs they reference."""

    SCHEMA = """
    CREATE TABLE IF NOT EXISTS results (
        key TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        output TEXT NOT NULL,
        created REAL NOT NULL
    )"""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.blobs = BlobStore(self.root / "blobs")
        self.db = _connect(self.root / "cache.db")
        self.db.execute(self.SCHEMA)

    def get(self, key: str) -> dict[str, Any] | None:
        row = self.db.execute("SELECT output FROM results WHERE key=?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, kind: str, output: dict[str, Any]) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO results(key, kind, output, created) VALUES (?,?,?,?)",
            (key, kind, json.dumps(output, ensure_ascii=False), time.time()),
        )

    def forget(self, key: str) -> None:
        self.db.execute("DELETE FROM results WHERE key=?", (key,))

    def integrity_errors(self) -> list[str]:
        """Problems a crash could have caused: a damaged database, or a result whose image is gone."""
        problems = [r[0] for r in self.db.execute("PRAGMA integrity_check") if r[0] != "ok"]
        for key, output in self.db.execute("SELECT key, output FROM results"):
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
        record TEXT NOT NULL
    )"""

    def __init__(self, path: Path) -> None:
        self.db = _connect(path)
        self.db.execute(self.SCHEMA)

    def put(self, case_id: str, position: int, record: dict[str, Any], complete: bool) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO cases(case_id, position, complete, record) VALUES (?,?,?,?)",
            (case_id, position, int(complete), json.dumps(record, ensure_ascii=False)),
        )

    def complete_ids(self) -> set[str]:
        return {r[0] for r in self.db.execute("SELECT case_id FROM cases WHERE complete=1")}

    def records(self) -> list[dict[str, Any]]:
        rows = self.db.execute("SELECT record FROM cases ORDER BY position")
        return [json.loads(r[0]) for r in rows]

    def close(self) -> None:
        self.db.close()
