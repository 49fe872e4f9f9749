"""Micro-batching shared by the local-model backends: many concurrent single requests, few model calls.

A model on a GPU makes a batch of N images (or N replies) in much less than N times the time of one,
but the engine asks for one result per node. The batcher sits between the two: requests that
arrive while the model is busy (or within a short window of the first one) wait in a queue, and
whenever the model is free the oldest request and every queued request compatible with it (same
``key``, up to ``limit`` of them) go into one call made in a worker thread.

There is no background task. The first request to find the batcher idle becomes the *leader*: it
runs batches until its own request is done, then hands leadership to the oldest waiting request.
That keeps the batcher free of event-loop state, so one batcher (cached per process with its
model) serves any number of successive ``anyio.run`` calls, and a cancelled request never leaves
others stranded: unfinished work goes back to the queue and leadership passes on.

Only one batch runs at a time per batcher, and a ``threading.Lock`` around the model call keeps
two event loops in different threads from entering the same (stateful, non-thread-safe) model.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.to_thread

#: How long a leader waits for companions before its first batch: long enough for requests started
#: together (one task group, one engine tick) to arrive, short against any model call.
DEFAULT_WINDOW_SECONDS = 0.005

#: Runs one batch in a worker thread: one payload per request in, one result (or the exception for
#: that request alone) per request out, in the same order.
BatchRunner = Callable[[list[Any]], Sequence[Any]]


@dataclass(eq=False)
class _Job:
    payload: Any
    key: Hashable
    limit: int
    wake: anyio.Event
    leads: bool = False
    finished: bool = False
    result: Any = None
    error: BaseException | None = None

    def settle(self, outcome: Any) -> None:
        if isinstance(outcome, BaseException):
            self.error = outcome
        else:
            self.result = outcome
        self.finished = True


@dataclass
class BatchStats:
    """What the batcher did, for tests and benchmarks."""

    calls: int = 0
    items: int = 0
    sizes: list[int] = field(default_factory=list)


class MicroBatcher:
    """Groups concurrent compatible requests into single calls of ``run_batch``."""

    def __init__(self, run_batch: BatchRunner, *, window: float = DEFAULT_WINDOW_SECONDS) -> None:
        self._run_batch = run_batch
        self.window = window
        #: Upper bound on any batch, lowered after an out-of-memory failure (None: no bound).
        self.cap: int | None = None
        self.stats = BatchStats()
        self._pending: list[_Job] = []
        self._leader_active = False
        self._call_lock = threading.Lock()

    async def submit(self, payload: Any, *, key: Hashable, limit: int) -> Any:
        """Queue one request and return its own result (or raise its own error).

        ``key`` says which requests may share a call (same kind and call parameters, same input
        sizes); ``limit`` is the largest batch this request may be part of.
        """
        job = _Job(payload=payload, key=key, limit=max(1, int(limit)), wake=anyio.Event())
        self._pending.append(job)
        first_leader = not self._leader_active
        if first_leader:
            self._leader_active = True
            job.leads = True
        try:
            while not job.finished:
                if job.leads:
                    await self._lead(job, gather=first_leader)
                else:
                    await job.wake.wait()
        finally:
            if not job.finished and job in self._pending:
                self._pending.remove(job)
            if job.leads:  # promoted, then cancelled before it could lead: pass leadership on
                job.leads = False
                self._hand_off()
        if job.error is not None:
            raise job.error
        return job.result

    async def _lead(self, job: _Job, *, gather: bool) -> None:
        try:
            if gather and self.window > 0:
                await anyio.sleep(self.window)
            while not job.finished:
                await self._run_one_batch(self._take_group())
        finally:
            job.leads = False
            if not job.finished and job in self._pending:
                self._pending.remove(job)
            self._hand_off()

    def _hand_off(self) -> None:
        if self._pending:
            successor = self._pending[0]
            successor.leads = True
            successor.wake.set()
        else:
            self._leader_active = False

    def _take_group(self) -> list[_Job]:
        head = self._pending[0]
        limit = head.limit if self.cap is None else max(1, min(head.limit, self.cap))
        group = [job for job in self._pending if job.key == head.key][:limit]
        for job in group:
            self._pending.remove(job)
        return group

    async def _run_one_batch(self, group: list[_Job]) -> None:
        try:
            outcomes = await anyio.to_thread.run_sync(self._call, [job.payload for job in group])
            for job, outcome in zip(group, outcomes):
                job.settle(outcome)
        except Exception as exc:  # the whole call failed: every request in it gets the error
            for job in group:
                job.settle(exc)
        finally:
            unfinished = [job for job in group if not job.finished]
            self._pending[:0] = unfinished  # cancelled before the call: keep their place
            for job in group:
                if job.finished:
                    job.wake.set()

    def _call(self, payloads: list[Any]) -> Sequence[Any]:
        with self._call_lock:
            self.stats.calls += 1
            self.stats.items += len(payloads)
            self.stats.sizes.append(len(payloads))
            outcomes = list(self._run_batch(payloads))
        if len(outcomes) != len(payloads):
            raise RuntimeError(f"batch runner returned {len(outcomes)} results for {len(payloads)} requests")
        return outcomes
