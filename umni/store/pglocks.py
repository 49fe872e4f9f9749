"""Folder locks and unit claims as PostgreSQL advisory locks, for a PostgreSQL store.

A shared filesystem that does not honour flock cannot keep two machines out of one run folder, but
the database every task already talks to can: a lock is ``pg_try_advisory_lock`` on a 64-bit key
made from the folder's absolute path and the lock's name (so every machine must mount the folders at
the same path, as a sweep's tasks do), held by the process's first connection (`PgSession`).

An advisory lock lives as long as its connection. When that connection drops, the server lets the
lock go; on reconnecting, before any other work, every held lock is taken again. If the old server
process still holds it (a network cut the server has not noticed yet), that process is ended and
the lock waited for. If another process took it meanwhile, the lock is lost: the session refuses
every later call with one StorageError (the run stops, its committed results kept), so two
processes never write one folder.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from umni.store.locks import Held
from umni.store.pgsession import PgSession
from umni.util.errors import StorageError
from umni.util.storage import storage_guard

__all__ = ["AdvisoryLocks", "lock_key"]

#: How long a reconnected process waits for its own old server process to let a lock go.
_RETAKE_WAIT = "10s"

_HOLDER = (
    "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1 "
    "AND classid::bigint = %s AND objid::bigint = %s "
    "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
)


def lock_key(name: str) -> int:
    """The signed 64-bit advisory lock key of `name` (collisions: about 1 in 10^10 for 10^4 locks)."""
    return int.from_bytes(hashlib.sha256(f"umni-lock:{name}".encode()).digest()[:8], "big", signed=True)


class _AdvisoryHeld:
    def __init__(self, locks: AdvisoryLocks, name: str, key: int) -> None:
        self.locks = locks
        self.name = name
        self.key = key
        #: why the lock was lost (None: held)
        self.lost: StorageError | None = None

    def release(self) -> None:
        self.locks._release(self)

    def check(self) -> None:
        if self.lost is not None:
            raise self.lost


class AdvisoryLocks:
    """Advisory locks on `session`'s first connection; see the module docstring."""

    def __init__(self, session: PgSession) -> None:
        self.session = session
        #: held locks by key; changed only on the first link, under its mutex (`PgSession.run(link=0)`)
        self._held: dict[int, _AdvisoryHeld] = {}
        session.hooks.append(self._retake)

    def try_hold(self, folder: Path, name: str) -> Held | None:
        with storage_guard(folder):
            folder.mkdir(parents=True, exist_ok=True)
        label = os.path.join(os.path.realpath(folder), name)
        key = lock_key(label)

        def take(conn: Any) -> _AdvisoryHeld | None:
            if key in self._held:  # this process holds it already (flock refuses a second holder too)
                return None
            if not conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]:
                return None
            held = self._held[key] = _AdvisoryHeld(
                self, label, key
            )  # recorded on the same link: a reconnect retakes it
            return held

        return self.session.run(take, link=0)

    def _release(self, held: _AdvisoryHeld) -> None:
        if held.lost is not None or self.session.failure is not None:
            self._held.pop(held.key, None)
            return

        def free(conn: Any) -> None:
            if self._held.pop(held.key, None) is not None:
                conn.execute("SELECT pg_advisory_unlock(%s)", (held.key,))

        self.session.run(free, link=0)

    def _retake(self, conn: Any, previous_pid: int) -> None:
        """On the first link's new connection: take every held lock again (see the module docstring)."""
        for held in list(self._held.values()):
            if held.lost is not None or conn.execute("SELECT pg_try_advisory_lock(%s)", (held.key,)).fetchone()[0]:
                continue
            row = conn.execute(_HOLDER, ((held.key >> 32) & 0xFFFFFFFF, held.key & 0xFFFFFFFF)).fetchone()
            holder = None if row is None else int(row[0])
            if holder == previous_pid and self._outwait(conn, held.key, previous_pid):
                continue
            if holder is None and conn.execute("SELECT pg_try_advisory_lock(%s)", (held.key,)).fetchone()[0]:
                continue  # let go between the two looks
            held.lost = StorageError(
                f"the lock on {held.name} was lost while the connection to the database was down, and another process "
                f"(server process {holder}) holds it now; stopping so that two processes never write one folder. "
                "Results committed so far are kept: run the same command again to resume",
                path=self.session.shown,
            )
            self.session.failure = held.lost

    def _outwait(self, conn: Any, key: int, pid: int) -> bool:
        """End this process's old server process (still holding `key` after a network cut) and wait for the lock."""
        conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
        try:
            with conn.transaction():
                conn.execute(f"SET LOCAL lock_timeout = '{_RETAKE_WAIT}'")
                conn.execute("SELECT pg_advisory_lock(%s)", (key,))
            return True
        except self.session.psycopg.errors.LockNotAvailable:
            return False

    def note(self, folder: Path) -> str | None:
        return None  # held in the database, whatever the filesystem
