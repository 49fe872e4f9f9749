"""Choosing among several servers of one model: per-server limits, cool-off of failing servers.

A fleet of vLLM or SGLang servers is one model to umni (see openai_http). Each call takes a slot on
the live server with the fewest calls in flight (ties go to the one used longest ago, so even calls
made one at a time spread out), waiting when every live server is at its limit rather than
overloading one. A server that fails in a way another server would not (unreachable, reset,
timed out, 502/503/504) is set aside for a cool-off and the call goes to another; a 429 sets aside
only that server, for as long as it asks. When none is left the caller gets `FleetDown`, which says
when the first one comes back. With ``adaptive`` on, each server's limit follows AIMD (halved on
429 or a slow reply, grown by one per round of good replies up to the cap). Each server set aside and each return is reported (`on_event`), so a
run records it in its event log and counts it in summary.json.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar
from urllib.parse import urlsplit

import anyio

C = TypeVar("C")

#: Seconds a server that failed is left out before calls go to it again.
DEFAULT_COOL_OFF_S = 10.0
#: Cap of calls in flight per server of an adaptive fleet without ``per_endpoint``.
DEFAULT_ADAPTIVE_CEILING = 16
#: Seconds after a cut of an adaptive limit during which further throttled replies do not cut it again.
ADAPTIVE_CUT_GAP_S = 1.0


def public_url(url: str) -> str:
    """The URL as it may be shown: scheme, host, port and path, without credentials or query."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path.rstrip('/')}"


def _whole(limit: float) -> float:
    """An adaptive limit as calls: its whole part (it grows by fractions); inf stays inf."""
    return limit if math.isinf(limit) else math.floor(limit)


@dataclass(eq=False)
class Endpoint(Generic[C]):
    """One server of the fleet and what is known of its health."""

    url: str
    client: C
    in_flight: int = 0
    #: `clock()` time before which no call is sent here (0: up).
    down_until: float = 0.0
    #: Why it was set aside last (for the error naming the fleet), e.g. "HTTP 503".
    reason: str = ""
    last_used: int = 0
    #: Set aside and not yet seen back (so its return is reported once).
    aside: bool = False
    #: Calls this server may have in flight now (adaptive fleets change it; inf: the fleet's cap only).
    limit: float = math.inf
    #: `clock()` time of the last cut of `limit` (one cut per burst of throttled replies).
    last_cut: float = -math.inf
    #: No longer listed by the fleet's discovery file: never chosen again (kept so indices stay put).
    retired: bool = False

    @property
    def name(self) -> str:
        return public_url(self.url)


@dataclass
class FleetDown(Exception):
    """No server could take the call: every one was tried in this attempt or is cooling off."""

    endpoints: Sequence[Endpoint[Any]]
    #: Seconds until the first server set aside comes back; None when none is cooling off.
    retry_after: float | None
    tried: dict[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        parts = []
        for endpoint in self.endpoints:
            why = self.tried.get(endpoint.name) or endpoint.reason or "busy"
            parts.append(f"{endpoint.name} ({why})")
        return "; ".join(parts)


class Fleet(Generic[C]):
    """The servers of one model, with at most `per_endpoint` calls in flight on each (None: no cap)."""

    def __init__(
        self,
        endpoints: Sequence[tuple[str, C]],
        *,
        per_endpoint: int | None = None,
        cool_off_s: float = DEFAULT_COOL_OFF_S,
        clock: Callable[[], float] = time.monotonic,
        on_event: Callable[..., None] | None = None,
        adaptive: bool = False,
        latency_target: float | None = None,
    ) -> None:
        if not endpoints:
            raise ValueError("a fleet needs at least one server")
        self.endpoints: list[Endpoint[C]] = [Endpoint(url, client) for url, client in endpoints]
        self.limit = per_endpoint if per_endpoint is not None else math.inf
        self.cool_off_s = cool_off_s
        self._clock = clock
        self._uses = itertools.count(1)
        self._waiters: list[anyio.Event] = []
        #: Called as ``on_event("server.set_aside" | "server.returned" | "server.slowed", server=…, reason=…, …)``.
        self._on_event = on_event
        #: AIMD per server: start at the cap, halve on a 429 or a reply slower than `latency_target`,
        #: add one per round of good replies, never above the cap.
        self.adaptive = adaptive
        self.latency_target = latency_target
        self.ceiling = float(per_endpoint) if per_endpoint is not None else float(DEFAULT_ADAPTIVE_CEILING)
        if adaptive:
            for endpoint in self.endpoints:
                endpoint.limit = self.ceiling

    def __len__(self) -> int:
        return sum(not e.retired for e in self.endpoints)

    def sync(self, urls: Sequence[str], make_client: Callable[[str], C]) -> None:
        """Serve exactly `urls` from now on (a discovery file was rewritten): new servers join, servers
        no longer listed retire once their calls in flight end (they are never chosen again)."""
        wanted = list(dict.fromkeys(urls))
        if not wanted:
            return  # an empty list is a launcher mid-rewrite, not a fleet of none
        known = {e.url: e for e in self.endpoints}
        for endpoint in self.endpoints:
            leaving = endpoint.url not in wanted
            if leaving != endpoint.retired:
                endpoint.retired = leaving
                self._report("server.removed" if leaving else "server.added", server=endpoint.name, reason="discovery file")
        for url in wanted:
            if url not in known:
                endpoint = Endpoint(url, make_client(url))
                if self.adaptive:
                    endpoint.limit = self.ceiling
                self.endpoints.append(endpoint)
                self._report("server.added", server=endpoint.name, reason="discovery file")
        waiters, self._waiters = self._waiters, []
        for event in waiters:
            event.set()

    async def acquire(self, skip: set[int] | None = None) -> tuple[int, Endpoint[C]]:
        """A slot on the least busy live server not in `skip` (indices), waiting for one to free.

        Raises FleetDown when every server is in `skip` or cooling off; release the slot with
        `release` whatever the call's outcome.
        """
        skip = skip or set()
        while True:
            now = self._clock()
            self._note_returns(now)
            live = [(i, e) for i, e in enumerate(self.endpoints) if i not in skip and not e.retired and e.down_until <= now]
            if not live:
                waits = [e.down_until - now for e in self.endpoints if e.down_until > now]
                raise FleetDown([e for e in self.endpoints if not e.retired], min(waits) if waits else None)
            free = [(i, e) for i, e in live if e.in_flight < min(self.limit, _whole(e.limit))]
            if free:
                index, best = min(free, key=lambda pair: (pair[1].in_flight, pair[1].last_used))
                best.in_flight += 1
                best.last_used = next(self._uses)
                return index, best
            await self._wait(now)

    def feedback(self, endpoint: Endpoint[C], *, throttled: bool, seconds: float | None) -> None:
        """How a call on `endpoint` went, for adaptive fleets: a 429 or a reply slower than the latency
        target halves its limit (once per cool-down of a second: the other calls of the same burst were
        already sent), a good reply adds 1/limit (one per round of calls), up to the cap."""
        if not self.adaptive:
            return
        slow = self.latency_target is not None and seconds is not None and seconds > self.latency_target
        if throttled or slow:
            now = self._clock()
            if now - endpoint.last_cut < ADAPTIVE_CUT_GAP_S:
                return
            endpoint.last_cut = now
            before = endpoint.limit
            endpoint.limit = max(1.0, math.floor(endpoint.limit / 2))
            if endpoint.limit < before:
                why = "HTTP 429" if throttled else f"reply took {seconds:.2f}s > latency_target {self.latency_target:g}s"
                self._report("server.slowed", server=endpoint.name, reason=why, limit=int(endpoint.limit))
            return
        grown = min(self.ceiling, endpoint.limit + 1.0 / endpoint.limit)
        if math.floor(grown) > math.floor(endpoint.limit):
            waiters, self._waiters = self._waiters, []
            for event in waiters:
                event.set()
        endpoint.limit = grown

    def _note_returns(self, now: float) -> None:
        for endpoint in self.endpoints:
            if endpoint.aside and endpoint.down_until <= now:
                endpoint.aside = False
                self._report("server.returned", server=endpoint.name, reason=f"cool-off after {endpoint.reason} ended")

    def _report(self, event: str, **fields: Any) -> None:
        if self._on_event is not None:
            self._on_event(event, at=time.time(), **fields)

    def release(self, endpoint: Endpoint[C]) -> None:
        endpoint.in_flight -= 1
        waiters, self._waiters = self._waiters, []
        for event in waiters:
            event.set()

    def set_aside(self, endpoint: Endpoint[C], reason: str, seconds: float | None = None) -> None:
        """Leave `endpoint` out for `seconds` (the cool-off when None). A lone server is never set
        aside: there is nothing to fail over to, and the engine's retries already wait."""
        if len(self) == 1:
            return
        pause = self.cool_off_s if seconds is None else seconds
        endpoint.down_until = max(endpoint.down_until, self._clock() + pause)
        endpoint.reason = reason
        if not endpoint.aside:  # one record per stretch out of service, not per failed call within it
            endpoint.aside = True
            self._report("server.set_aside", server=endpoint.name, reason=reason, seconds=round(pause, 3))

    async def _wait(self, now: float) -> None:
        """Until a slot frees, or a server cooling off comes back (it may be free)."""
        event = anyio.Event()
        self._waiters.append(event)
        returns = [e.down_until - now for e in self.endpoints if e.down_until > now]
        try:
            with anyio.move_on_after(min(returns) if returns else math.inf):
                await event.wait()
        finally:
            if event in self._waiters:
                self._waiters.remove(event)
