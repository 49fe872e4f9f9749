"""The tasks a run starts for its nodes: plain asyncio tasks, kept together like a task group's.

A run starts a task or two per node (the call, in its lane; then storing the output). A task from
anyio's task group costs several times what the event loop's own `create_task` does, which made
task starts a large share of the engine's cost per node. `NodeTasks` keeps the two task-group
promises the runner relies on: the first error stops the run (the other tasks are cancelled and
the errors are raised together), and a run that ends normally waits for every task it started.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import anyio

__all__ = ["NodeTasks"]


class NodeTasks:
    """Start tasks with `start` while `run(body)` is running; see the module docstring."""

    def __init__(self) -> None:
        self._live: set[asyncio.Task[Any]] = set()
        self._errors: list[BaseException] = []
        self._scope: anyio.CancelScope | None = None

    def start(self, fn: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> None:
        task = asyncio.get_running_loop().create_task(fn(*args))
        self._live.add(task)  # the loop keeps only a weak reference to a task
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self._live.discard(task)
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:
            self._errors.append(error)
            if self._scope is not None:
                self._scope.cancel()

    async def run(self, body: Callable[[], Awaitable[None]]) -> None:
        """Await `body`, then every task started meanwhile (and any they start). The first error,
        in `body` or a task, cancels the rest; the errors are raised as one exception group."""
        try:
            with anyio.CancelScope() as scope:
                self._scope = scope
                try:
                    await body()
                    while self._live:
                        await asyncio.wait(set(self._live))
                except Exception as exc:
                    self._errors.append(exc)
        finally:
            self._scope = None
            if self._live:  # stopping on an error, or cancelled from outside: nothing is left running
                for task in self._live:
                    task.cancel()
                with anyio.CancelScope(shield=True):
                    await asyncio.wait(set(self._live))
        if self._errors:
            raise BaseExceptionGroup("the run stopped", self._errors)
