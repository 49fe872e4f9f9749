"""A backend's lane: its concurrency limit and the ready nodes waiting for a slot, earliest case
first. The runner submits each model call (or piece of in-process code) to the lane of its backend."""

from __future__ import annotations

import heapq
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from umni.util.tasks import NodeTasks

#: What a lane runs: a backend call (or in-process code), which may hand back the work that follows
#: it (storing the output, releasing dependents) to run outside the lane.
LaneTask = Callable[[], Awaitable[Callable[[], Coroutine[Any, Any, None]] | None]]


class Lane:
    """A backend's concurrency limit and the ready nodes waiting for a slot.

    A slot is held for the call only: what a finished call leaves to do (the store's commit, which
    waits for its batch) runs in its own task, so a slot is never idle while a write is committed."""

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self.running = 0
        self.waiting: list[tuple[tuple[int, int], int, LaneTask]] = []

    def submit(self, tasks: NodeTasks, priority: tuple[int, int], seq: int, task: LaneTask) -> None:
        """Start `task` now if a slot is free, else queue it by priority (earliest case first)."""
        if self.running < self.limit:
            self.running += 1
            tasks.start(self.drain, tasks, task)
        else:
            heapq.heappush(self.waiting, (priority, seq, task))

    async def drain(self, tasks: NodeTasks, task: LaneTask) -> None:
        """Run `task`, then the waiting ones in priority order, while this slot is held."""
        while True:
            then = await task()
            if then is not None:
                tasks.start(then)
            if not self.waiting:
                self.running -= 1
                return
            _, _, task = heapq.heappop(self.waiting)
