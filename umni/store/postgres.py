"""A result store in PostgreSQL (`--cache postgresql://user@host/db`), shared by many machines.

SQLite's WAL does not work over a network filesystem, so shards on several machines share one
PostgreSQL database instead. Reads are async queries on one connection; writes queued while a
transaction is open are committed together by one writer task (one round of commits per burst of
finished nodes). `put_if_absent` is `INSERT … ON CONFLICT DO NOTHING` plus a read of the winner,
so two shards computing one key agree on one value. Schema creation takes a transaction-scoped
advisory lock first: a plain `CREATE TABLE IF NOT EXISTS` from several processes at once fails in
all but one of them (unique violation on pg_type).

Needs psycopg 3 (`pip install 'umni[postgres]'`). The table is `umni_results`, so the database may
hold other things.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from umni.store.results import TALLY, Batches, StoredRow, Write, chunks, decode_row, encode_write, row_checksum
from umni.util.credentials import credential_values, redact_url
from umni.util.errors import ConfigError, StorageError
from umni.util.secrets import register_secret

__all__ = ["PostgresResults", "redact"]

#: Most writes committed in one transaction.
MAX_BATCH = 512

#: Any constant distinct from other users' advisory locks: serialises schema creation.
_SCHEMA_LOCK = 0x756D6E69  # "umni"

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS umni_results (
        key TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        output TEXT NOT NULL,
        created DOUBLE PRECISION NOT NULL,
        checksum TEXT,
        provenance TEXT
    )""",
    "ALTER TABLE umni_results ADD COLUMN IF NOT EXISTS provenance TEXT",
)


#: The name this module gave `redact_url`, still importable from here.
redact = redact_url


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise ConfigError("a postgresql:// store needs psycopg 3: pip install 'umni[postgres]'") from None
    return psycopg


class PostgresResults:
    """Results in a PostgreSQL database; see the module docstring."""

    def __init__(self, url: str) -> None:
        self._dsn = url
        self.url = redact_url(url)  # what messages and run.json name
        for secret in credential_values(url):  # masked wherever it turns up: libpq quotes a badly escaped password
            register_secret(secret)
        self._pg = _psycopg()
        with self._guard():
            self._sync = self._pg.connect(url, autocommit=True)
            with self._sync.transaction():
                self._sync.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
                for statement in _SCHEMA:
                    self._sync.execute(statement)
        self._conns: dict[asyncio.AbstractEventLoop, tuple[Any, Any]] = {}  # loop -> (reader, writer)
        self._opening: dict[asyncio.AbstractEventLoop, asyncio.Task[tuple[Any, Any]]] = {}
        self._reads: Batches[str, dict[str, Any] | None] = Batches(self._read_batch, MAX_BATCH)
        self._writes: Batches[Write, dict[str, Any] | None] = Batches(self._commit_batch, MAX_BATCH)
        self.commits = 0

    @contextmanager
    def _guard(self) -> Iterator[None]:
        """A server or connection fault becomes StorageError naming the store (not a node outcome)."""
        try:
            yield
        except StorageError:
            raise
        except Exception as exc:
            if isinstance(exc, (self._pg.Error, OSError)):
                raise StorageError(f"{type(exc).__name__}: {str(exc).strip()}", path=self.url) from exc
            raise

    async def _connections(self) -> tuple[Any, Any]:
        """This event loop's (reader, writer) connections, opened once: the first caller opens
        them and every caller meanwhile awaits the same opening (a run's first wave of lookups
        must not open a connection each)."""
        loop = asyncio.get_running_loop()
        pair = self._conns.get(loop)
        if pair is not None:
            return pair
        opening = self._opening.get(loop)
        if opening is None:
            opening = self._opening[loop] = loop.create_task(self._open(loop))
        try:
            return await asyncio.shield(opening)
        finally:
            if opening.done():
                self._opening.pop(loop, None)

    async def _open(self, loop: asyncio.AbstractEventLoop) -> tuple[Any, Any]:
        for dead in [lp for lp in self._conns if lp.is_closed()]:
            for conn in self._conns.pop(dead):
                conn.pgconn.finish()
        with self._guard():
            reader = await self._pg.AsyncConnection.connect(self._dsn, autocommit=True)
            writer = await self._pg.AsyncConnection.connect(self._dsn, autocommit=True)
        pair = self._conns[loop] = (reader, writer)
        return pair

    # ------------------------------------------------------------------ reads
    async def get(self, key: str) -> dict[str, Any] | None:
        """One key; lookups made while a query is out are answered together by the next one (a
        reader task, as writes have a writer), so a wave of nodes costs a few round trips."""
        return await self._reads.submit(key)

    async def _read_batch(self, keys: list[str]) -> list[dict[str, Any] | None]:
        found = await self.get_many(keys)
        values: list[dict[str, Any] | None] = []
        given: set[str] = set()
        for key in keys:
            value = found.get(key)
            if value is not None and key in given:  # each caller its own copy, as separate reads give
                value = copy.deepcopy(value)
            given.add(key)
            values.append(value)
        return values

    async def get_many(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        reader, _ = await self._connections()
        found: dict[str, dict[str, Any]] = {}
        for part in chunks(list(dict.fromkeys(keys))):
            with self._guard():
                cur = await reader.execute(
                    "SELECT key, kind, output, checksum FROM umni_results WHERE key = ANY(%s)", (list(part),)
                )
                rows = await cur.fetchall()
            for key, kind, text, checksum in rows:
                output = decode_row(key, kind, text, checksum)
                if output is not None:
                    found[key] = output
        return found

    def get_now(self, key: str) -> dict[str, Any] | None:
        with self._guard():
            row = self._sync.execute("SELECT kind, output, checksum FROM umni_results WHERE key=%s", (key,)).fetchone()
        return None if row is None else decode_row(key, *row)

    def tally(self) -> list[tuple[str, str | None, int, float, float]]:
        """(kind, provenance, results, first and last write time) per distinct pair (`umni status STORE`)."""
        with self._guard():
            rows = self._sync.execute(TALLY.format(table="umni_results")).fetchall()
        return [(str(k), p, int(n), float(a), float(b)) for k, p, n, a, b in rows]

    def rows(self) -> Iterator[StoredRow]:
        with self._guard():
            rows = self._sync.execute("SELECT key, kind, output, checksum, provenance FROM umni_results").fetchall()
        for row in rows:
            yield StoredRow(*row)

    def structure_errors(self) -> list[str]:
        return []  # the server keeps its own files consistent; rows are checked by checksum

    # ----------------------------------------------------------------- writes
    async def put_if_absent(
        self, key: str, kind: str, output: Mapping[str, Any], provenance: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        winner = await self._writes.submit(encode_write(key, kind, output, provenance))
        return dict(output) if winner is None else winner

    async def _commit_batch(self, batch: list[Write]) -> list[dict[str, Any] | None]:
        """One transaction for the batch; for each write, the row that won (None: this write)."""
        _, writer = await self._connections()
        with self._guard():
            async with writer.transaction():
                winners = await self._write_batch(writer, batch)
        self.commits += 1
        return winners

    @staticmethod
    async def _write_batch(conn: Any, batch: list[Write]) -> list[dict[str, Any] | None]:
        """Inside a transaction: insert every new key (one pipelined round trip), then read the rows
        that won (one more); a damaged row in the way is replaced. None: this write won."""
        now = time.time()
        rows = [(w.key, w.kind, w.text, now, row_checksum(w.key, w.kind, w.text), w.provenance) for w in batch]
        async with conn.cursor() as cur:
            # in key order: two transactions inserting overlapping keys in different orders would
            # each wait on a row the other holds, and the server would abort one ('deadlock detected')
            await cur.executemany(
                "INSERT INTO umni_results(key, kind, output, created, checksum, provenance) VALUES (%s,%s,%s,%s,%s,%s) "
                "ON CONFLICT (key) DO NOTHING",
                sorted(rows, key=lambda row: row[0]),
            )
            await cur.execute(
                "SELECT key, kind, output, checksum FROM umni_results WHERE key = ANY(%s) ORDER BY key FOR UPDATE",
                ([w.key for w in batch],),
            )
            stored = {key: (kind, text, checksum) for key, kind, text, checksum in await cur.fetchall()}
        winners: list[dict[str, Any] | None] = []
        for key, kind, text, checksum, prov in ((r[0], r[1], r[2], r[4], r[5]) for r in rows):
            row = stored.get(key)
            if row is not None and row[1] == text and row[2] == checksum:
                winners.append(None)  # this write's row (or an identical one)
                continue
            existing = None if row is None else decode_row(key, *row)
            if existing is not None:
                winners.append(existing)
                continue
            # a damaged row (or one from before checksums): replace it, as SQLite does
            await conn.execute(
                "UPDATE umni_results SET kind=%s, output=%s, created=%s, checksum=%s, provenance=%s WHERE key=%s",
                (kind, text, now, checksum, prov, key),
            )
            stored[key] = (kind, text, checksum)
            winners.append(None)
        return winners

    def put_now(
        self,
        key: str,
        kind: str,
        output: Mapping[str, Any],
        *,
        replace: bool = False,
        provenance: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        write = encode_write(key, kind, output, provenance)
        text, prov = write.text, write.provenance
        with self._guard():
            if replace:
                self._sync.execute(
                    "INSERT INTO umni_results(key, kind, output, created, checksum, provenance) VALUES (%s,%s,%s,%s,%s,%s) "
                    "ON CONFLICT (key) DO UPDATE SET kind=EXCLUDED.kind, output=EXCLUDED.output, created=EXCLUDED.created, "
                    "checksum=EXCLUDED.checksum, provenance=EXCLUDED.provenance",
                    (key, kind, text, time.time(), row_checksum(key, kind, text), prov),
                )
                return dict(output)
            with self._sync.transaction():
                self._sync.execute(
                    "INSERT INTO umni_results(key, kind, output, created, checksum, provenance) VALUES (%s,%s,%s,%s,%s,%s) "
                    "ON CONFLICT (key) DO NOTHING",
                    (key, kind, text, time.time(), row_checksum(key, kind, text), prov),
                )
                row = self._sync.execute(
                    "SELECT kind, output, checksum FROM umni_results WHERE key=%s FOR UPDATE", (key,)
                ).fetchone()
                existing = None if row is None else decode_row(key, *row)
                if existing is None:
                    self._sync.execute(
                        "UPDATE umni_results SET kind=%s, output=%s, created=%s, checksum=%s, provenance=%s WHERE key=%s",
                        (kind, text, time.time(), row_checksum(key, kind, text), prov, key),
                    )
                    return dict(output)
                return existing

    async def forget(self, key: str) -> None:
        _, writer = await self._connections()
        with self._guard():
            await writer.execute("DELETE FROM umni_results WHERE key=%s", (key,))

    def forget_now(self, key: str) -> None:
        with self._guard():
            self._sync.execute("DELETE FROM umni_results WHERE key=%s", (key,))

    # ------------------------------------------------------------------ close
    async def close(self) -> None:
        await self._writes.drain()
        pair = self._conns.pop(asyncio.get_running_loop(), None)
        for conn in pair or ():
            await conn.close()
        self.close_now()

    def close_now(self) -> None:
        for pair in self._conns.values():
            for conn in pair:
                conn.pgconn.finish()
        self._conns.clear()
        self._sync.close()
