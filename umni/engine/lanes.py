"""A backend's lane: its concurrency limit and the ready nodes waiting for a place, earliest case
first. The runner submits each model call (or piece of in-process code) to the lane of its backend.

A place is held while the backend works. A node that has its reply and only engine work left
(encoding and writing an image) gives its place up early (`Place.release`), so the model takes its
next request meanwhile; if it then calls the backend again, it waits for a place like any other
(`Place.reacquire`)."""

from __future__ import annotations

import heapq
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import anyio

from umni.util.tasks import NodeTasks

#: What a lane runs: a backend call (or in-process code) given its place, which may hand back the
#: work that follows it (storing the output, releasing dependents) to run outside the lane.
LaneTask = Callable[["Place"], Awaitable[Callable[[], Coroutine[Any, Any, None]] | None]]
Priority = tuple[int, int]


class _Waiter:
    """A node waiting to get a place back (`Place.reacquire`)."""

    __slots__ = ("granted", "abandoned")

    def __init__(self) -> None:
        self.granted = anyio.Event()
        self.abandoned = False


class Lane:
    """A backend's concurrency limit and the ready nodes waiting for a place.

    A place is held for the call only: what a finished call leaves to do (the store's commit, which
    waits for its batch) runs in its own task, so a place is never idle while a write is committed."""

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self.running = 0
        self.waiting: list[tuple[Priority, int, LaneTask | _Waiter]] = []

    def submit(self, tasks: NodeTasks, priority: Priority, seq: int, task: LaneTask) -> None:
        """Start `task` now if a place is free, else queue it by priority (earliest case first)."""
        if self.running < self.limit:
            self.running += 1
            tasks.start(self.drain, tasks, priority, seq, task)
        else:
            heapq.heappush(self.waiting, (priority, seq, task))

    async def drain(self, tasks: NodeTasks, priority: Priority, seq: int, task: LaneTask) -> None:
        """Run `task`, then the waiting ones in priority order, while this place is held."""
        while True:
            place = Place(self, tasks, priority, seq)
            then = await task(place)
            if then is not None:
                tasks.start(then)
            if not place.held:  # given up early: whoever it went to carries on
                return
            place.held = False
            following = self._hand_on()
            if following is None:
                return
            priority, seq, task = following

    def _hand_on(self) -> tuple[Priority, int, LaneTask] | None:
        """Give a freed place to the first in line: a waiting task is returned for the caller to run
        in it; a node taking its place back is woken; with nobody waiting the place is free."""
        while self.waiting:
            priority, seq, entry = heapq.heappop(self.waiting)
            if not isinstance(entry, _Waiter):
                return priority, seq, entry
            if not entry.abandoned:
                entry.granted.set()
                return None
        self.running -= 1
        return None

    def _release(self, tasks: NodeTasks) -> None:
        following = self._hand_on()
        if following is not None:
            tasks.start(self.drain, tasks, *following)


class Place:
    """One held place in a lane, as the running task sees it."""

    __slots__ = ("lane", "tasks", "priority", "seq", "held")

    def __init__(self, lane: Lane, tasks: NodeTasks, priority: Priority, seq: int) -> None:
        self.lane = lane
        self.tasks = tasks
        self.priority = priority
        self.seq = seq
        self.held = True

    def release(self) -> None:
        """Give the place to the next in line now: what is left to do needs no backend."""
        if self.held:
            self.held = False
            self.lane._release(self.tasks)

    async def reacquire(self) -> None:
        """Wait for a place again (in this node's turn) before calling the backend once more."""
        if self.held:
            return
        lane = self.lane
        if lane.running < lane.limit:
            lane.running += 1
        else:
            waiter = _Waiter()
            heapq.heappush(lane.waiting, (self.priority, self.seq, waiter))
            try:
                await waiter.granted.wait()
            except BaseException:
                waiter.abandoned = True
                if waiter.granted.is_set():  # handed a place just as it was cancelled: pass it on
                    lane._release(self.tasks)
                raise
        self.held = True
