"""A process's connections to a PostgreSQL store: one by default, and they outlive a server restart.

A Slurm array of 64 tasks against a server allowing 100 clients cannot afford several connections
per task, so a process holds `pool_size` connections (default 1), set in the store URL
(``postgresql://user@host/db?pool_size=2``); every query of the process, from any thread or event
loop, waits its turn for one of them. Work runs on a synchronous psycopg connection, in a thread
when the caller is async (`PostgresResults`).

When a connection drops (a server restart, a failover, a network cut), the work is run again on a
new connection, the connection retried with growing random pauses (tenacity) for up to
`reconnect_timeout` seconds (default 300, also in the URL); past that, one StorageError naming the
store and the last error, and the run stops as on any storage fault: every committed result stays,
and the same command resumes. Running work again is safe because each unit of work is one
transaction that is idempotent by its keys (a write's transaction either never committed and is
written now, or did and the rewrite finds the identical row). A connection that stops answering
without closing is found by TCP keepalives (about a minute), unless the URL sets its own.

psycopg_pool was not used: its connections are interchangeable (it closes and replaces any of them,
and cannot hand back a given one), while an advisory lock belongs to one connection and must be
released on it (`umni.store.pglocks` keeps locks on the first connection); and its own reconnect
loop would wait beside this one. This keeps only a queue of idle connections.
"""

from __future__ import annotations

import queue
import re
import threading
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from tenacity import Retrying, retry_if_exception_type, stop_after_delay, stop_when_event_set, wait_random_exponential

from umni.util.errors import ConfigError, StorageError
from umni.util.secrets import scrub

__all__ = ["PgOptions", "PgSession", "split_options", "psycopg_module"]

T = TypeVar("T")

#: SQLSTATEs a first connection waits out: the server is starting or stopping, or is full.
_TRANSIENT_AT_START = frozenset({"57P03", "53300"})

#: libpq settings given unless the URL sets them: no connection attempt or dead peer holds a task for long.
_CONNECT_DEFAULTS = {
    "connect_timeout": "10",
    "keepalives": "1",
    "keepalives_idle": "30",
    "keepalives_interval": "10",
    "keepalives_count": "3",
}

#: Longest pause between reconnection attempts (seconds).
_MAX_PAUSE = 2.0


def psycopg_module() -> Any:
    try:
        import psycopg
    except ImportError:
        raise ConfigError("a postgresql:// store needs psycopg 3: pip install 'umni[postgres]'") from None
    return psycopg


class PgOptions(BaseModel):
    """umni's own settings in a PostgreSQL store URL (taken out before the URL reaches libpq)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: connections this process holds (each array task is one process: tasks × pool_size ≤ max_connections)
    pool_size: int = Field(1, ge=1, le=64)
    #: seconds to keep trying to reconnect after a connection drops, before the run stops with a StorageError
    reconnect_timeout: float = Field(300.0, ge=0)


def split_options(url: str, shown: str) -> tuple[str, PgOptions]:
    """(the URL without umni's settings, the settings); `shown` names the store in errors."""
    parts = urlsplit(url)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    ours = {k: v for k, v in pairs if k in PgOptions.model_fields}
    try:
        options = PgOptions.model_validate(ours)
    except ValidationError as exc:
        first = exc.errors()[0]
        name = first["loc"][0] if first["loc"] else "?"
        raise ConfigError(f"{shown}: {name}={ours.get(str(name))!r} in the store URL: {first['msg']}") from None
    if not ours:
        return url, options
    rest = urlencode([(k, v) for k, v in pairs if k not in PgOptions.model_fields], quote_via=quote)  # libpq reads %20, not +
    return urlunsplit(parts._replace(query=rest)), options


def one_line(exc: BaseException) -> str:
    """An exception as one line (libpq's messages span several)."""
    text = re.sub(r"\s+", " ", str(exc)).strip()
    return f"{type(exc).__name__}: {text}"


class _Dropped(Exception):
    """The connection went away (or could not be made): the work is tried again on a new one."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(one_line(cause))
        self.cause = cause


class Link:
    """One connection, the lock of whoever uses it, and the server process it last talked to."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.mutex = threading.Lock()
        self.conn: Any = None
        #: the server process of the connection (kept after it drops: a lock may still sit there)
        self.pid: int | None = None

    def drop(self) -> None:
        if self.conn is not None:
            self.conn.close()
        self.conn = None


#: Called with the first link's new connection and the server process of the one it replaces, before
#: any other work runs on it (advisory locks, which live on the first link, are taken again there).
ReconnectHook = Callable[[Any, int], None]


class PgSession:
    """`pool_size` connections to one database; see the module docstring."""

    def __init__(self, url: str, shown: str) -> None:
        self.psycopg = psycopg_module()
        dsn, self.options = split_options(url, shown)
        try:
            given = self.psycopg.conninfo.conninfo_to_dict(dsn)
        except self.psycopg.ProgrammingError as exc:  # a parameter libpq does not know, a bad escape
            raise ConfigError(f"{shown}: {scrub(one_line(exc))}; see libpq's connection URI parameters") from None
        self._connect_args = {"autocommit": True, **{k: v for k, v in _CONNECT_DEFAULTS.items() if k not in given}}
        self._dsn = dsn
        self.shown = shown
        self.links = [Link(i) for i in range(self.options.pool_size)]
        self._idle: queue.SimpleQueue[Link] = queue.SimpleQueue()
        for link in self.links:
            self._idle.put(link)
        self._connected_once = False
        self._closed = threading.Event()
        self.hooks: list[ReconnectHook] = []
        #: set once the session may no longer be used (a lock another process took): every call raises it
        self.failure: StorageError | None = None
        #: connections made after a drop (for tests and the log)
        self.reconnects = 0

    def run(self, work: Callable[[Any], T], *, link: int | None = None) -> T:
        """`work(connection)` on an idle connection (or on link `link`), run again on a new connection
        when the one it ran on dropped, for up to `reconnect_timeout` seconds."""
        retrying = Retrying(
            retry=retry_if_exception_type(_Dropped),
            stop=stop_after_delay(self.options.reconnect_timeout) | stop_when_event_set(self._closed),
            wait=wait_random_exponential(multiplier=0.05, max=_MAX_PAUSE),
            reraise=True,
        )
        try:
            for attempt in retrying:
                with attempt:
                    return self._once(work, link)
        except _Dropped as dropped:
            if self._closed.is_set():
                raise StorageError("the store was closed while waiting for the database", path=self.shown) from None
            raise StorageError(
                f"lost the connection to the database and could not reconnect within {self.options.reconnect_timeout:g} s "
                f"(reconnect_timeout in the store URL); last error: {dropped}. Results committed so far are kept: "
                "run the same command again to resume",
                path=self.shown,
            ) from dropped.cause
        raise AssertionError("unreachable: tenacity either returns or raises")

    def _once(self, work: Callable[[Any], T], index: int | None) -> T:
        link = self.links[index] if index is not None else self._idle.get()
        try:
            with link.mutex:
                if self.failure is not None:
                    raise self.failure
                if self._closed.is_set():
                    raise StorageError("the result store is closed", path=self.shown)
                conn = self._connection(link)
                if self.failure is not None:  # a lock found lost while reconnecting
                    raise self.failure
                try:
                    return work(conn)
                except self.psycopg.Error as exc:
                    raise self._fault(link, exc) from exc
        finally:
            if index is None:
                self._idle.put(link)

    def _connection(self, link: Link) -> Any:
        """The link's open connection, made now if it has none (then the hooks run on it)."""
        if link.conn is not None and not link.conn.closed:
            return link.conn
        link.drop()
        try:
            conn = self.psycopg.connect(self._dsn, **self._connect_args)
        except (self.psycopg.OperationalError, OSError) as exc:
            if not self._connected_once and getattr(exc, "sqlstate", None) not in _TRANSIENT_AT_START:
                # a wrong host, port or password at start: say so now, not after minutes of retries
                raise StorageError(one_line(exc), path=self.shown) from exc
            raise _Dropped(exc) from exc
        previous, link.conn, link.pid = link.pid, conn, conn.info.backend_pid
        self._connected_once = True
        if previous is not None:
            self.reconnects += 1
        if previous is not None and link.index == 0:
            try:
                for hook in self.hooks:
                    hook(conn, previous)
            except self.psycopg.Error as exc:
                raise self._fault(link, exc) from exc
        return conn

    def _fault(self, link: Link, exc: BaseException) -> Exception:
        """What a database error amounts to: a dropped connection (the work runs again on a new one)
        when the connection itself is gone, else a StorageError naming the store."""
        if link.conn is None or link.conn.closed:
            link.drop()
            return _Dropped(exc)
        return StorageError(one_line(exc), path=self.shown)

    def connections(self) -> int:
        """Connections open now."""
        return sum(1 for link in self.links if link.conn is not None and not link.conn.closed)

    def close(self) -> None:
        """Close every connection (waiting for work in flight; work waiting to reconnect gives up)."""
        self._closed.set()
        for link in self.links:
            with link.mutex:
                link.drop()
