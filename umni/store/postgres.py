"""A result store in PostgreSQL (`--cache postgresql://user@host/db`), shared by many machines.

SQLite's WAL does not work over a network filesystem, so shards on several machines share one
PostgreSQL database instead. The process holds one connection (`pool_size` in the URL for more) and
survives a server restart (`reconnect_timeout`): see `umni.store.pgsession`. Lookups queued while a
query is out are answered together by the next one, and writes queued while a transaction is open
are committed together in one (one round of commits per burst of finished nodes); both run in a
thread, so the event loop never waits on the network. `put_if_absent` is `INSERT … ON CONFLICT DO
NOTHING` plus a read of the winner, so two shards computing one key agree on one value, and a batch
the server may or may not have committed before a restart is simply written again. Schema creation
takes a transaction-scoped advisory lock first: a plain `CREATE TABLE IF NOT EXISTS` from several
processes at once fails in all but one of them (unique violation on pg_type). Run-folder locks and
sweep unit claims are advisory locks too (`locks`, `umni.store.pglocks`).

Needs psycopg 3 (`pip install 'umni[postgres]'`). The table is `umni_results`, so the database may
hold other things.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from umni.store.pglocks import AdvisoryLocks
from umni.store.pgsession import PgSession
from umni.store.results import TALLY, Batches, StoredRow, Write, chunks, decode_row, encode_write, row_checksum
from umni.util.credentials import credential_values, redact_url
from umni.util.secrets import register_secret

__all__ = ["PostgresResults", "connection_slots"]

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


def connection_slots(url: str) -> tuple[int, int]:
    """(max_connections, superuser_reserved_connections) of the server at `url`, read over one short
    connection; StorageError naming the store when it cannot be reached."""
    session = PgSession(url, redact_url(url))
    try:
        return session.run(
            lambda conn: (
                int(conn.execute("SHOW max_connections").fetchone()[0]),
                int(conn.execute("SHOW superuser_reserved_connections").fetchone()[0]),
            )
        )
    finally:
        session.close()


class PostgresResults:
    """Results in a PostgreSQL database; see the module docstring."""

    def __init__(self, url: str) -> None:
        self.url = redact_url(url)  # what messages and run.json name
        for secret in credential_values(url):  # masked wherever it turns up: libpq quotes a badly escaped password
            register_secret(secret)
        self.session = PgSession(url, self.url)
        #: run-folder locks and unit claims, in the database
        self.locks = AdvisoryLocks(self.session)
        self.session.run(self._create_schema)
        self._reads: Batches[str, dict[str, Any] | None] = Batches(self._read_batch, MAX_BATCH)
        self._writes: Batches[Write, dict[str, Any] | None] = Batches(self._commit_batch, MAX_BATCH)
        self.commits = 0

    @staticmethod
    def _create_schema(conn: Any) -> None:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            for statement in _SCHEMA:
                conn.execute(statement)

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
        return await asyncio.to_thread(self._read_many, keys)

    def _read_many(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        def read(conn: Any) -> list[tuple[str, str, str, str | None]]:
            rows = []
            for part in chunks(list(dict.fromkeys(keys))):
                cur = conn.execute("SELECT key, kind, output, checksum FROM umni_results WHERE key = ANY(%s)", (list(part),))
                rows += cur.fetchall()
            return rows

        found: dict[str, dict[str, Any]] = {}
        for key, kind, text, checksum in self.session.run(read):
            output = decode_row(key, kind, text, checksum)
            if output is not None:
                found[key] = output
        return found

    def get_now(self, key: str) -> dict[str, Any] | None:
        row = self.session.run(
            lambda conn: conn.execute("SELECT kind, output, checksum FROM umni_results WHERE key=%s", (key,)).fetchone()
        )
        return None if row is None else decode_row(key, *row)

    def tally(self) -> list[tuple[str, str | None, int, float, float]]:
        """(kind, provenance, results, first and last write time) per distinct pair (`umni status STORE`)."""
        rows = self.session.run(lambda conn: conn.execute(TALLY.format(table="umni_results")).fetchall())
        return [(str(k), p, int(n), float(a), float(b)) for k, p, n, a, b in rows]

    def rows(self) -> Iterator[StoredRow]:
        rows = self.session.run(
            lambda conn: conn.execute("SELECT key, kind, output, checksum, provenance FROM umni_results").fetchall()
        )
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
        """One transaction for the batch (in a thread); for each write, the row that won (None: this
        write). Run again whole after a reconnect: see the module docstring."""
        winners = await asyncio.to_thread(self.session.run, lambda conn: self._write_batch(conn, batch))
        self.commits += 1
        return winners

    @staticmethod
    def _write_batch(conn: Any, batch: list[Write]) -> list[dict[str, Any] | None]:
        """One transaction: insert every new key (one pipelined round trip), then read the rows that
        won (one more); a damaged row in the way is replaced. None: this write won (or an identical
        row is there: this very write, committed before the connection dropped)."""
        now = time.time()
        rows = [(w.key, w.kind, w.text, now, row_checksum(w.key, w.kind, w.text), w.provenance) for w in batch]
        with conn.transaction(), conn.cursor() as cur:
            # in key order: two transactions inserting overlapping keys in different orders would
            # each wait on a row the other holds, and the server would abort one ('deadlock detected')
            cur.executemany(
                "INSERT INTO umni_results(key, kind, output, created, checksum, provenance) VALUES (%s,%s,%s,%s,%s,%s) "
                "ON CONFLICT (key) DO NOTHING",
                sorted(rows, key=lambda row: row[0]),
            )
            cur.execute(
                "SELECT key, kind, output, checksum FROM umni_results WHERE key = ANY(%s) ORDER BY key FOR UPDATE",
                ([w.key for w in batch],),
            )
            stored = {key: (kind, text, checksum) for key, kind, text, checksum in cur.fetchall()}
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
                cur.execute(
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
        if not replace:
            (winner,) = self.session.run(lambda conn: self._write_batch(conn, [write]))
            return dict(output) if winner is None else winner
        self.session.run(
            lambda conn: conn.execute(
                "INSERT INTO umni_results(key, kind, output, created, checksum, provenance) VALUES (%s,%s,%s,%s,%s,%s) "
                "ON CONFLICT (key) DO UPDATE SET kind=EXCLUDED.kind, output=EXCLUDED.output, created=EXCLUDED.created, "
                "checksum=EXCLUDED.checksum, provenance=EXCLUDED.provenance",
                (key, kind, write.text, time.time(), row_checksum(key, kind, write.text), write.provenance),
            )
        )
        return dict(output)

    async def forget(self, key: str) -> None:
        await asyncio.to_thread(self.forget_now, key)

    def forget_now(self, key: str) -> None:
        self.session.run(lambda conn: conn.execute("DELETE FROM umni_results WHERE key=%s", (key,)))

    # ------------------------------------------------------------------ close
    async def close(self) -> None:
        await self._writes.drain()
        self.close_now()

    def close_now(self) -> None:
        self.session.close()
