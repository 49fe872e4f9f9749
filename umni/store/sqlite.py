"""The default result store: one SQLite file (WAL), shared by the processes of one machine.

Reads run inline: in WAL mode a read takes microseconds and never waits for a writer. Writes go
through one writer: a task per event loop collects every write queued while the previous batch was
committing and hands the batch to the store's single writer thread, which commits it in one
transaction; so the event loop never waits on an fsync (or on another process's write lock), a
burst of finished nodes costs one commit and one wake-up of the loop. A caller's write returns once
its transaction committed, so a crash loses at most the writes not yet acknowledged (nodes still
running, as before).

Schema creation (and the upgrade of a cache from before checksums or provenance) happens inside
`BEGIN IMMEDIATE`, so processes opening one fresh file at once serialise instead of racing.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tenacity import retry, retry_if_exception, stop_after_delay, wait_random_exponential

from umni.store.results import TALLY, Batches, StoredRow, Write, chunks, decode_row, encode_write, row_checksum
from umni.util.errors import StorageError
from umni.util.storage import storage_guard, touch_with_umask

__all__ = ["SqliteResults", "connect", "SCHEMA_VERSION"]

#: `PRAGMA user_version` of the databases this version writes (1: row checksums; 2: provenance).
SCHEMA_VERSION = 2

#: Most writes committed in one transaction.
MAX_BATCH = 512

_SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
    key TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    output TEXT NOT NULL,
    created REAL NOT NULL,
    checksum TEXT,
    provenance TEXT
)"""


_INSERT_NEW = "INSERT INTO results(key, kind, output, created, checksum, provenance) VALUES (?,?,?,?,?,?) ON CONFLICT(key) DO NOTHING"
_REPLACE = "INSERT OR REPLACE INTO results(key, kind, output, created, checksum, provenance) VALUES (?,?,?,?,?,?)"


def connect(path: Path) -> sqlite3.Connection:
    """A WAL connection that waits (60 s) for other writers instead of failing."""
    with storage_guard(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        touch_with_umask(path)
        conn = sqlite3.connect(path, timeout=60.0, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA busy_timeout=60000")
        _switch_to_wal(conn)
        conn.execute("PRAGMA synchronous=NORMAL")
        return conn


@retry(
    retry=retry_if_exception(lambda exc: isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc)),
    wait=wait_random_exponential(multiplier=0.005, max=0.5),
    stop=stop_after_delay(60),
    reraise=True,
)
def _switch_to_wal(conn: sqlite3.Connection) -> None:
    """Put a (possibly fresh) database in WAL mode. When several processes open a new file at the
    same moment, SQLite answers some of them "database is locked" at once rather than through the
    busy handler (waiting could deadlock the lock upgrade), so the switch is simply tried again."""
    conn.execute("PRAGMA journal_mode=WAL")


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


class SqliteResults:
    """Results in `<path>` (a SQLite file); see the module docstring."""

    #: reads are local and take microseconds: the runner makes them on the scheduling path
    inline_reads = True

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.url = f"sqlite:///{self.path}"
        self.db = connect(self.path)  # reads, on the caller's thread
        with storage_guard(self.path):
            self.db.execute("BEGIN IMMEDIATE")
            try:
                self.db.execute(_SCHEMA)
                columns = _columns(self.db, "results")
                if "checksum" not in columns:
                    # a cache from before row checksums: its rows cannot be verified, so they read as
                    # misses and are replaced as the nodes run again
                    self.db.execute("ALTER TABLE results ADD COLUMN checksum TEXT")
                if "provenance" not in columns:
                    self.db.execute("ALTER TABLE results ADD COLUMN provenance TEXT")
                self.db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
                self.db.execute("COMMIT")
            except BaseException:
                if self.db.in_transaction:
                    self.db.execute("ROLLBACK")
                raise
        #: the one writer thread (its own connection, made there); every commit runs on it
        self._writer = ThreadPoolExecutor(1, thread_name_prefix=f"umni-store-writer:{self.path.name}")
        self._writer_conn: sqlite3.Connection | None = None
        self._writes: Batches[Write, dict[str, Any] | None] = Batches(self._commit_async, MAX_BATCH)
        self._closed = False
        #: commits made by the writer (a burst of writes shares one): for tests and the bench
        self.commits = 0

    # ------------------------------------------------------------------ reads
    def get_now(self, key: str) -> dict[str, Any] | None:
        with storage_guard(self.path):
            row = self.db.execute("SELECT kind, output, checksum FROM results WHERE key=?", (key,)).fetchone()
        return None if row is None else decode_row(key, *row)

    async def get(self, key: str) -> dict[str, Any] | None:
        return self.get_now(key)

    async def get_many(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        return self.get_many_now(keys)

    def get_many_now(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        for part in chunks(list(dict.fromkeys(keys))):
            marks = ",".join("?" * len(part))
            with storage_guard(self.path):
                rows = self.db.execute(
                    f"SELECT key, kind, output, checksum FROM results WHERE key IN ({marks})", part
                ).fetchall()
            for key, kind, text, checksum in rows:
                output = decode_row(key, kind, text, checksum)
                if output is not None:
                    found[key] = output
        return found

    def rows(self) -> Iterator[StoredRow]:
        with storage_guard(self.path):
            rows = self.db.execute("SELECT key, kind, output, checksum, provenance FROM results").fetchall()
        for row in rows:
            yield StoredRow(*row)

    def tally(self) -> list[tuple[str, str | None, int, float, float]]:
        """(kind, provenance, results, first and last write time) per distinct pair (`umni status STORE`)."""
        with storage_guard(self.path):
            rows = self.db.execute(TALLY.format(table="results")).fetchall()
        return [(str(k), p, int(n), float(a), float(b)) for k, p, n, a, b in rows]

    def structure_errors(self) -> list[str]:
        with storage_guard(self.path):
            return [r[0] for r in self.db.execute("PRAGMA integrity_check") if r[0] != "ok"]

    # ----------------------------------------------------------------- writes
    def _write(
        self, key: str, kind: str, output: Mapping[str, Any], replace: bool, provenance: Mapping[str, Any] | None
    ) -> Write:
        if self._closed:
            raise StorageError("the result store is closed", path=self.path)
        return encode_write(key, kind, output, provenance, replace)

    async def put_if_absent(
        self, key: str, kind: str, output: Mapping[str, Any], provenance: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        winner = await self._writes.submit(self._write(key, kind, output, False, provenance))
        return dict(output) if winner is None else winner

    async def _commit_async(self, batch: list[Write]) -> list[dict[str, Any] | None]:
        """A batch of writes, committed by the writer thread while the event loop goes on."""
        return await asyncio.get_running_loop().run_in_executor(self._writer, self._commit_batch, batch)

    def put_now(
        self,
        key: str,
        kind: str,
        output: Mapping[str, Any],
        *,
        replace: bool = False,
        provenance: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        write = self._write(key, kind, output, replace, provenance)
        (winner,) = self._writer.submit(self._commit_batch, [write]).result()
        return dict(output) if winner is None else winner

    def forget_now(self, key: str) -> None:
        with storage_guard(self.path):
            self.db.execute("DELETE FROM results WHERE key=?", (key,))

    async def forget(self, key: str) -> None:
        self.forget_now(key)

    def _commit_batch(self, batch: list[Write]) -> list[dict[str, Any] | None]:
        """On the writer thread: commit `batch`; a fault becomes StorageError naming the file."""
        try:
            if self._writer_conn is None:
                self._writer_conn = connect(self.path)
            return self._commit(self._writer_conn, batch)
        except StorageError:
            raise
        except Exception as exc:
            raise StorageError(f"writing results failed: {type(exc).__name__}: {exc}", path=self.path) from exc

    def _commit(self, conn: sqlite3.Connection, batch: list[Write]) -> list[dict[str, Any] | None]:
        """One transaction for the batch; for each write, the row that won (None: this write)."""
        winners: list[dict[str, Any] | None] = []
        with storage_guard(self.path):
            conn.execute("BEGIN IMMEDIATE")
            try:
                for write in batch:
                    row = (
                        write.key,
                        write.kind,
                        write.text,
                        time.time(),
                        row_checksum(write.key, write.kind, write.text),
                        write.provenance,
                    )
                    if write.replace:
                        conn.execute(_REPLACE, row)
                        winners.append(None)
                        continue
                    if conn.execute(_INSERT_NEW, row).rowcount == 1:
                        winners.append(None)
                        continue
                    found = conn.execute(
                        "SELECT kind, output, checksum FROM results WHERE key=?", (write.key,)
                    ).fetchone()
                    existing = None if found is None else decode_row(write.key, *found)
                    if existing is None:  # a damaged row (or one from before checksums) is replaced
                        conn.execute(_REPLACE, row)
                    winners.append(existing)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        self.commits += 1
        return winners

    # ------------------------------------------------------------------ close
    def close_now(self) -> None:
        if self._closed:
            return
        self._closed = True

        def close_writer() -> None:
            if self._writer_conn is not None:
                self._writer_conn.close()

        self._writer.submit(close_writer).result()  # after every write already handed over
        self._writer.shutdown(wait=True)
        self.db.close()

    async def close(self) -> None:
        await asyncio.to_thread(self.close_now)
