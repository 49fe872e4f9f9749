"""Pre-flight: one cheap probe per backend before a run starts (issue 26 item 5, issue 27).

A typo'd base_url, a missing key, a wrong model name or a chat-only server bound to generate used to
show only as a run of 100 % failed nodes that exits 0. Each backend that can probe its servers
(`Backend.preflight`: OpenAI-compatible ones) is asked once, all at once, with the roles the run binds
to it; every problem is one line naming the server. They are warnings: the run still goes ahead
(a server may come up meanwhile), and its failures are counted as always.
"""

from __future__ import annotations

import anyio

from umni.backends.bindings import Bindings
from umni.backends.contract import Backend
from umni.util.stopping import run_async


def preflight(*all_bindings: Bindings) -> list[str]:
    """Every problem the bound backends' probes find, in binding order; a backend shared by several
    runs (a sweep's) is probed once, for every role any of them binds it to."""
    by_backend: dict[int, tuple[Backend, set[str]]] = {}
    for bindings in all_bindings:
        for role in bindings.roles():
            backend = bindings[role]
            by_backend.setdefault(id(backend), (backend, set()))[1].add(role)
    found: dict[int, list[str]] = {}

    async def probe_all() -> None:
        async def one(key: int) -> None:
            backend, roles = by_backend[key]
            found[key] = await backend.preflight(frozenset(roles))

        async with anyio.create_task_group() as group:
            for key in by_backend:
                group.start_soon(one, key)

    run_async(probe_all)
    return [line for key in by_backend for line in found.get(key, [])]
