"""What the servers behind a run's backends did during the run: each set aside and each return.

A fleet of OpenAI-compatible servers fails over silently to the caller (issue 25 item 16); this
records every change of a server's state in the run's event log (with the wall-clock time and the
reason) and counts them for summary.json, so a dead server is visible after the run, not only while
it happens.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import TracebackType
from typing import Any

from umni.backends.contract import Backend
from umni.store.runfolder import ServerTally, Summary
from umni.util.events import EventLog


class ServerLog:
    """Observes `backends` while open (a ``with`` block): events go to `events`, counts to `summary`."""

    def __init__(self, events: EventLog, backends: Iterable[Backend]) -> None:
        self.events = events
        self.backends = list(backends)
        #: server -> its backend, how often it was set aside, returned (and slowed), the last reason
        self.per_server: dict[str, dict[str, int | str]] = {}
        self._stops: list[Callable[[], None]] = []

    def __enter__(self) -> ServerLog:
        for backend in self.backends:
            who = backend.usage_key()
            for name in backend.servers():
                self.per_server.setdefault(name, {"backend": who, "set_aside": 0, "returned": 0})
            self._stops.append(backend.observe(self._listener(who)))
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        for stop in self._stops:
            stop()
        self._stops = []

    def _listener(self, who: str) -> Callable[..., None]:
        def heard(event: str, **fields: Any) -> None:
            self.events.emit(event, backend=who, **fields)
            server = fields.get("server")
            if event.startswith("server.") and isinstance(server, str):
                entry = self.per_server.setdefault(server, {"backend": who, "set_aside": 0, "returned": 0})
                what = event.removeprefix("server.")  # set_aside, returned, slowed (an adaptive limit cut)
                entry[what] = int(entry.get(what, 0)) + 1
                entry["last_reason"] = fields.get("reason", "")

        return heard

    def add_to(self, summary: Summary) -> None:
        """``summary.servers``, only for runs that have servers to speak of (a fleet, or any event)."""
        if not self.per_server:
            return
        summary.servers = ServerTally(
            set_aside=sum(int(e["set_aside"]) for e in self.per_server.values()),
            returned=sum(int(e["returned"]) for e in self.per_server.values()),
            by_server=dict(sorted(self.per_server.items())),
        )
