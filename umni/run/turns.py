"""Models take turns on a Ray cluster: a sweep's runs grouped by the pools they need, each pool loaded once.

A sweep of ten models on a cluster that holds three at a time cannot start every pool at once. The
scheduler here groups the sweep's runs by the Ray pools they use (a model's runs across every
protocol, role binding and seed form one group), and starts a group when the pools it still needs fit
in what the cluster has free; a pool is released as soon as no run that needs it is left, which frees
room for the next group. Groups wait in sweep order (a later group that fits starts before an earlier
one that does not), so every pool is loaded exactly once. Only when nothing runs and no waiting group
fits — pools kept loaded for later groups are in the way — are idle pools released early, those the
first waiting group does not need first and only until it fits (each loaded again when its turn
comes); the event log marks such a release ``"early": true``. A run with no case left needs no pool.

A pool that can never fit (more CPUs or GPUs than the nodes its labels select have, or no node with
its labels) is refused before any run starts. Backends that are not Ray pools take no turn: their
runs start at once. Every load and release goes into ``events.jsonl`` of the sweep's folder
(``pool.load`` / ``pool.release`` with the seconds held and the CPU- and GPU-hours of that hold).

One run takes turns the same way when its own pools do not fit together (a generator and a judge of
8 GPUs each on one 8-GPU node): `plan_stages` cuts it into stages, each a pass over its cases that
computes only its stage's roles, run through `in_turns` one after another (`umni.run.evaluation`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from umni.backends.contract import Backend
from umni.backends.placement import RayPool, connect
from umni.store.runfolder import EVENTS_JSONL
from umni.util.errors import ConfigError
from umni.util.events import EventLog

#: The resources the scheduler accounts for (Ray's names).
RESOURCES = ("CPU", "GPU")

#: Seconds between looks at `ray.available_resources()` while Ray frees what a released pool held.
POLL_S = 0.05


async def take_turns(
    out: Path, ray: str | None, runs: Sequence[Sequence[Backend]], work: Callable[[int], Coroutine[Any, Any, None]]
) -> None:
    """Run `work(index)` for each run (`runs[index]`: the backends it binds): all at once when none is
    a Ray pool, else in turns (`Turns`), logging each pool's loads into ``out/events.jsonl``."""
    if not any(pools_of(backends) for backends in runs):
        await in_turns(EventLog(None), runs, work)
        return
    connect(ray or "auto")
    events = EventLog(out / EVENTS_JSONL)  # the sweep folder keeps its event log as a run folder does
    try:
        await in_turns(events, runs, work)
    finally:
        events.close()


async def in_turns(events: EventLog, runs: Sequence[Sequence[Backend]], work: Callable[[int], Coroutine[Any, Any, None]]) -> None:
    """`take_turns` on a connected cluster, each pool's loads logged into `events` (a sweep's log,
    or a run's own when one run takes turns: `plan_stages`)."""
    if not any(pools_of(backends) for backends in runs):
        async with anyio.create_task_group() as tg:
            for index in range(len(runs)):
                tg.start_soon(work, index)
        return
    await Turns(runs, events).run(work)


@dataclass(frozen=True)
class Stage:
    """A part of one run that takes its own turn: the roles whose nodes it computes (None: every
    role, the run in one piece) and the pools it needs loaded."""

    roles: frozenset[str] | None
    pools: list[RayPool]


def plan_stages(bound: Mapping[str, Backend]) -> list[Stage] | None:
    """How one run takes turns. `bound`: role -> backend, in the order the run's graph reaches the
    roles. None when no role is on a Ray pool (nothing takes a turn); one stage when the cluster can
    hold every pool at once; else the pools in that order, cut into stages whose pools fit the
    cluster together (a generator's stage, then its judge's), each stage computing the roles of its
    pools and those of every backend that is not a pool. A pool that can never fit, alone, is
    refused here, before any stage runs."""
    pools = list({id(p): p for p in pools_of(list(bound.values()))}.values())
    if not pools:
        return None
    import ray

    nodes = ray.nodes()
    if _fits(_total(pools), _capacity(nodes)):
        return [Stage(None, pools)]
    cut: list[list[RayPool]] = [[]]
    for pool in pools:
        if cut[-1] and not _fits(_total([*cut[-1], pool]), _capacity(nodes)):
            cut.append([])
        cut[-1].append(pool)
    refuse_what_never_fits([_Group(group) for group in cut], nodes)
    anywhere = {role for role, backend in bound.items() if not isinstance(backend, RayPool)}
    return [Stage(frozenset(anywhere | {r for r, b in bound.items() if any(b is p for p in group)}), group) for group in cut]


@dataclass
class _Group:
    """Runs that need the same pools, started together when those pools are loaded."""

    pools: list[RayPool]
    runs: list[int] = field(default_factory=list)


def pools_of(backends: Sequence[Backend]) -> list[RayPool]:
    return [b for b in backends if isinstance(b, RayPool)]


def plan_groups(runs: Sequence[Sequence[Backend]]) -> list[_Group]:
    """Runs grouped by the pools they need; groups ordered by the pools' first appearance in the
    sweep, so groups sharing a pool (a model with two judges) sit next to each other."""
    first: dict[int, int] = {}
    groups: dict[tuple[int, ...], _Group] = {}
    for index, backends in enumerate(runs):
        pools = pools_of(backends)
        for pool in pools:
            first.setdefault(id(pool), len(first))
        key = tuple(sorted(first[id(p)] for p in pools))
        groups.setdefault(key, _Group(sorted(pools, key=lambda p: first[id(p)]))).runs.append(index)
    return [groups[key] for key in sorted(groups)]


def _total(pools: Sequence[RayPool]) -> dict[str, float]:
    total = dict.fromkeys(RESOURCES, 0.0)
    for pool in pools:
        for resource, amount in pool.demand().items():
            total[resource] = total.get(resource, 0.0) + amount
    return total


def _fits(need: dict[str, float], free: dict[str, float]) -> bool:
    return all(need.get(r, 0.0) <= free.get(r, 0.0) + 1e-9 for r in RESOURCES)


def _capacity(nodes: list[dict[str, object]]) -> dict[str, float]:
    """What the cluster's alive nodes have in all (`ray.nodes()`), used or not."""
    capacity = dict.fromkeys(RESOURCES, 0.0)
    for node in nodes:
        if node.get("Alive"):
            resources = node.get("Resources") or {}
            assert isinstance(resources, dict)
            for resource in RESOURCES:
                capacity[resource] += float(resources.get(resource, 0.0))
    return capacity


def refuse_what_never_fits(groups: Sequence[_Group], nodes: list[dict[str, object]]) -> None:
    """A pool, or a group's pools together, that the cluster can never hold: refused before any work."""
    capacity = _capacity(nodes)
    for group in groups:
        for pool in group.pools:
            refused = pool.shape.never_fits(pool.spec, nodes)
            if refused:
                raise ConfigError(refused)
        need = _total(group.pools)
        if not _fits(need, capacity):
            specs = ", ".join(str(p.spec) for p in group.pools)
            raise ConfigError(
                f"runs that bind {specs} together need {need['CPU']:g} CPU and {need['GPU']:g} GPU at once, "
                f"the Ray cluster has {capacity['CPU']:g} CPU and {capacity['GPU']:g} GPU; lower their replicas/cpus/gpus"
            )


class Turns:
    """One sweep's (or sweep shard's) schedule: which group runs now, and each pool's loads and hours."""

    def __init__(self, runs: Sequence[Sequence[Backend]], events: EventLog) -> None:
        self.groups = plan_groups(runs)
        self.events = events
        self.pools_of = [pools_of(backends) for backends in runs]
        self.users = {id(p): 0 for g in self.groups for p in g.pools}  # runs not finished that need the pool
        for pools in self.pools_of:
            for pool in pools:
                self.users[id(pool)] += 1
        self.active = dict.fromkeys(self.users, 0)  # runs of the pool running now
        self.loaded: dict[int, RayPool] = {}
        self.since: dict[int, float] = {}
        self.free: dict[str, float] = {}
        self.loading = 0  # groups started whose pools are still loading
        self.wake = anyio.Event()

    async def run(self, work: Callable[[int], Coroutine[Any, Any, None]]) -> None:
        """Run `work(index)` for every run, each once its group's pools are loaded."""
        import ray

        refuse_what_never_fits(self.groups, ray.nodes())
        available = ray.available_resources()
        self.free = {r: float(available.get(r, 0.0)) for r in RESOURCES}
        self.events.emit("turns.plan", groups=[[str(p.spec) for p in g.pools] for g in self.groups], free=self.free)
        pending = list(self.groups)
        try:
            await self._schedule(pending, work)
        finally:  # a failed sweep's pools are closed by its caller; what they held is still told
            for key in list(self.since):
                self._account(self.loaded[key], interrupted=True)

    async def _schedule(self, pending: list[_Group], work: Callable[[int], Coroutine[Any, Any, None]]) -> None:
        async with anyio.create_task_group() as tg:
            while pending:
                for group in list(pending):
                    new = [p for p in group.pools if id(p) not in self.loaded]
                    need = _total(new)
                    if _fits(need, self.free):
                        for pool in new:
                            self.loaded[id(pool)] = pool
                        self.free = {r: self.free[r] - need[r] for r in RESOURCES}
                        pending.remove(group)
                        self.loading += 1
                        tg.start_soon(self._group, group, new, work)
                if pending and not any(self.active.values()) and not self.loading:
                    await self._evict_idle(pending[0])
                    continue
                if pending:
                    await self.wake.wait()
                    self.wake = anyio.Event()

    async def _group(self, group: _Group, new: list[RayPool], work: Callable[[int], Coroutine[Any, Any, None]]) -> None:
        async with anyio.create_task_group() as loading:
            for pool in new:
                loading.start_soon(self._load, pool)
        self.loading -= 1
        for index in group.runs:
            for pool in self.pools_of[index]:
                self.active[id(pool)] += 1
        async with anyio.create_task_group() as runs:
            for index in group.runs:
                runs.start_soon(self._run, index, work)

    async def _run(self, index: int, work: Callable[[int], Coroutine[Any, Any, None]]) -> None:
        await work(index)
        for pool in self.pools_of[index]:
            self.active[id(pool)] -= 1
            self.users[id(pool)] -= 1
            if self.users[id(pool)] == 0:
                await self._release(pool)
        self.wake.set()

    async def _load(self, pool: RayPool) -> None:
        """Start `pool` once Ray shows what it asks for free (Ray frees a killed actor's share a moment later)."""
        import ray

        deadline = time.monotonic() + pool.start_timeout
        while time.monotonic() < deadline:
            available = ray.available_resources()
            if all(available.get(r, 0.0) >= amount - 1e-9 for r, amount in pool.demand().items()):
                break
            await anyio.sleep(POLL_S)
        self.since[id(pool)] = time.time()
        await pool.ensure_started()  # refuses with the spec named if the cluster still lacks the room
        self.events.emit("pool.load", **pool.describe())

    async def _release(self, pool: RayPool, *, early: bool = False) -> None:
        await pool.ensure_closed()
        self._account(pool, **({"early": True} if early else {}))

    def _account(self, pool: RayPool, **flags: bool) -> None:
        """Free what `pool` held in the ledger and log the hold: seconds, CPU- and GPU-hours."""
        held = time.time() - self.since.pop(id(pool))
        demand = pool.demand()
        self.loaded.pop(id(pool), None)
        self.free = {r: self.free[r] + demand.get(r, 0.0) for r in RESOURCES}
        self.events.emit(
            "pool.release",
            spec=str(pool.spec),
            seconds=round(held, 3),
            cpu_hours=demand.get("CPU", 0.0) * held / 3600,
            gpu_hours=demand.get("GPU", 0.0) * held / 3600,
            **flags,
        )

    async def _evict_idle(self, head: _Group) -> None:
        """Nothing runs and no waiting group fits: release pools kept for later groups until the first
        waiting group (`head`) fits, those it does not need first. When the sweep holds none, the room
        is someone else's, so wait and read what Ray has free again (`refuse_what_never_fits` made
        sure the group fits an empty cluster)."""
        idle = [p for key, p in self.loaded.items() if self.active[key] == 0 and key in self.since]
        idle.sort(key=lambda p: p in head.pools)  # a pool the head group needs goes last
        for pool in idle:
            await self._release(pool, early=True)
            if _fits(_total([p for p in head.pools if id(p) not in self.loaded]), self.free):
                return
        if not self.loaded:
            await anyio.sleep(1.0)
            import ray

            available = ray.available_resources()
            self.free = {r: float(available.get(r, 0.0)) for r in RESOURCES}
