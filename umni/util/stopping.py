"""Stopping a command on SIGTERM (a scheduler's cancel, `kill`) as gently as Ctrl-C stops it.

Raising an exception from a signal handler lands it at whatever bytecode the main thread runs
next: inside the event loop's own bookkeeping, a library's lock or a callback, from where it can
leave a lock held or a thread waiting forever, and the process then never exits (seen under load:
the "terminated" line printed, then a hang at interpreter exit). So while an event loop started by
`run_async` runs, SIGTERM cancels that loop's main task instead (what anyio does for Ctrl-C), the
cancellation reaches every task at an `await`, cleanup runs as for any cancellation, and
`run_async` then raises `Terminated`. Outside a loop (plain code between runs) the handler raises
`Terminated` at once, as Ctrl-C raises KeyboardInterrupt. A second SIGTERM while the first is
being handled raises at once too, for a cleanup that hangs.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import asyncio

__all__ = ["Terminated", "on_sigterm", "run_async"]

T = TypeVar("T")


class Terminated(KeyboardInterrupt):
    """SIGTERM stopped the command; like KeyboardInterrupt, so what finished is kept."""


class _Stop:
    """The main thread's running loop (at most one: signals reach only the main thread)."""

    task: asyncio.Task[object] | None = None
    requested = False


def run_async(fn: Callable[[], Awaitable[T]]) -> T:
    """`anyio.run(fn)`, stopped by a SIGTERM (while `on_sigterm` is installed) through cancellation."""
    import asyncio  # here, not at the top: a command that starts no loop does not pay for them

    import anyio

    if threading.current_thread() is not threading.main_thread():
        return anyio.run(fn)

    async def root() -> T:
        _Stop.task = asyncio.current_task()
        try:
            return await fn()
        finally:
            _Stop.task = None

    _Stop.requested = False
    try:
        result = anyio.run(root)
    except (asyncio.CancelledError, KeyboardInterrupt) as exc:
        if _Stop.requested:
            raise Terminated() from None
        raise exc
    finally:
        _Stop.task = None
    if _Stop.requested:  # the run swallowed the cancellation and ended: still stop the command
        raise Terminated()
    return result


def _handle(signum: int, frame: FrameType | None) -> None:
    task = _Stop.task
    if task is None or task.done() or _Stop.requested:
        _Stop.requested = True
        raise Terminated()
    _Stop.requested = True
    task.cancel()
    task.get_loop().call_soon_threadsafe(lambda: None)  # wake a loop asleep in select()


@contextmanager
def on_sigterm() -> Iterator[None]:
    """SIGTERM stops the command (see the module docstring) while inside; the previous handler after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _handle)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
