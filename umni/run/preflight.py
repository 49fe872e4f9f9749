"""Pre-flight: one cheap probe per backend before a run starts (issue 26 item 5, issue 27).

A typo'd base_url, a missing key, a wrong model name or a chat-only server bound to generate used to
show only as a run of 100 % failed nodes that exits 0. Each backend that can probe its servers
(`Backend.preflight`: OpenAI-compatible ones) is asked once, all at once, with the roles the run binds
to it; every problem is one line naming the server. They are warnings: the run still goes ahead
(a server may come up meanwhile), and its failures are counted as always. A spec that cannot work
at all (the hosted API with no key) is refused there with one line (ConfigError), before any call.

`settle` runs before every run (pre-flight or not): each backend learns what its identity depends on
that only its server can tell, so every key is made with it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio

from umni.backends.bindings import Bindings
from umni.backends.contract import Backend
from umni.util.errors import InputError
from umni.util.stopping import run_async

T = TypeVar("T")


def _bound(*all_bindings: Bindings) -> dict[int, tuple[Backend, set[str]]]:
    """Each distinct backend with every role any of the bindings gives it, in binding order."""
    by_backend: dict[int, tuple[Backend, set[str]]] = {}
    for bindings in all_bindings:
        for role in bindings.roles():
            backend = bindings[role]
            by_backend.setdefault(id(backend), (backend, set()))[1].add(role)
    return by_backend


async def _each(by_backend: dict[int, tuple[Backend, set[str]]], ask: Callable[[Backend, frozenset[str]], Awaitable[T]]) -> dict[int, T]:
    """`ask` every backend at once; a refusal (ConfigError) is raised as itself, not inside a group."""
    found: dict[int, T] = {}

    async def one(key: int) -> None:
        backend, roles = by_backend[key]
        found[key] = await ask(backend, frozenset(roles))

    try:
        async with anyio.create_task_group() as group:
            for key in by_backend:
                group.start_soon(one, key)
    except BaseExceptionGroup as failed:
        refusals = [e for e in failed.exceptions if isinstance(e, InputError)]
        if refusals:
            raise refusals[0] from None
        raise
    return found


def preflight(*all_bindings: Bindings) -> list[str]:
    """Every problem the bound backends' probes find, in binding order; a backend shared by several
    runs (a sweep's) is probed once, for every role any of them binds it to."""
    by_backend = _bound(*all_bindings)
    found = run_async(lambda: _each(by_backend, lambda backend, roles: backend.preflight(roles)))
    return [line for key in by_backend for line in found.get(key, [])]


async def settle(bindings: Bindings) -> dict[str, dict[str, Any]]:
    """Settle every bound backend (`Backend.settle`); what their servers reported, by backend spec."""
    by_backend = _bound(bindings)
    found = await _each(by_backend, lambda backend, roles: backend.settle(roles))
    return {str(backend.spec): found[key] for key, (backend, _) in by_backend.items() if found.get(key)}
