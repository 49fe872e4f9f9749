"""The runner: executes case graphs, each node as soon as its inputs are ready.

Scheduling is event driven: when a node finishes, the nodes waiting on it are checked and the ready
ones start at once (not layer by layer). Every backend has a lane with a concurrency limit; ready
nodes beyond the limit wait in the lane, earliest case first, so cases finish steadily and memory
stays flat however many cases there are (only a window of cases is built and active at a time).

Each node: cache key → cache hit, or a call with bounded retries (retryable errors only, with
exponential backoff and jitter, honouring a server's Retry-After) → result persisted at once →
dependents released. A node that gives up becomes a typed `Failure`; nodes that need its output are
`blocked`, never run on a made-up value.
"""

from __future__ import annotations

import copy
import functools
import itertools
import time
from collections import Counter, deque
from collections.abc import Callable, Coroutine, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import anyio

from umni.backends.bindings import Bindings
from umni.backends.contract import Backend
from umni.engine.failures import KEY_FAULTS, failed, failure, one_error, unkeyable
from umni.engine.kinds import Kind, KindContext, RunStats, Services, get_kind
from umni.engine.kinds.base import MIN_IMAGE_SIDE, check_usage
from umni.engine.kinds.compute import json_output
from umni.engine.kinds.inputs import InputReader
from umni.engine.lanes import Lane, Place
from umni.engine.readiness import blocked_by, gate, node_key_with
from umni.graph.graph import Graph, Node
from umni.graph.outcomes import CaseResult, Outcome, Status
from umni.store.cache import Cache
from umni.util.errors import StorageError
from umni.util.events import EventLog
from umni.util.policy import CachePolicy, RetryPolicy
from umni.util.progress import Progress
from umni.util.tasks import NodeTasks

__all__ = [
    "MIN_IMAGE_SIDE", "CaseJob", "CaseResult", "LanePool", "RetryPolicy", "CachePolicy", "RunStats", "Runner",
    "check_usage", "content_fingerprint", "json_output",
]  # fmt: skip

def content_fingerprint(output: dict[str, Any], kind: str | None = None) -> str:
    """What a node's output contributes to the keys of nodes that read it (see `Kind.fingerprint`)."""
    return get_kind(kind or "compute").fingerprint(output)


@dataclass
class CaseJob:
    """One case to run: its position (for ordering), id, and how to build its graph."""

    position: int
    case_id: str
    build: Callable[[], Graph[Any]]


CaseDone = Callable[[CaseJob, Graph, dict[str, Outcome]], None]


@dataclass(frozen=True)
class _Lookup:
    """A keyed node waiting for its wave's cache read (`read`: whether it reads the cache at all);
    `settle` takes the row found (or None) and goes on as `Runner._settle`."""

    key: str
    read: bool
    settle: Callable[[dict[str, Any] | None], Outcome | None]


class _CaseRun:
    def __init__(self, job: CaseJob, graph: Graph, order: list[str]) -> None:
        self.job = job
        self.graph = graph
        self.order = {nid: i for i, nid in enumerate(order)}
        self.outcomes: dict[str, Outcome] = {}
        self.closed = False
        self.waiting = {nid: len(graph.nodes[nid].upstream()) for nid in order}
        self.dependents: dict[str, list[str]] = {nid: [] for nid in order}
        for nid in order:
            for up in graph.nodes[nid].upstream():
                self.dependents[up].append(nid)


class LanePool:
    """One lane per backend instance. Runners that share a pool (the runs of a sweep) share each
    backend's concurrency limit instead of multiplying it."""

    def __init__(self) -> None:
        self._lanes: dict[int, Lane] = {}
        self.compute = Lane(1 << 30)
        #: cache key -> nodes (of any runner in the pool) waiting for the same work to finish
        self.inflight: dict[str, list[tuple[Runner, _CaseRun, str]]] = {}
        #: tie-break of equal priorities in the lanes; shared, since the lanes are (never compare tasks)
        self.seq = itertools.count()

    def lanes_for(self, bindings: Bindings, concurrency: int | None) -> dict[int, Lane]:
        """The lane of each bound backend (by id): its own `concurrency` option when its spec sets
        one, else the run's `concurrency`, else the backend's default. A pool of replicas (placement=ray)
        keeps its whole capacity: a run-wide `--concurrency` must not idle its replicas."""
        lanes = {}
        for backend in bindings.unique():
            own = "concurrency" in backend.spec.options or getattr(backend, "pooled", False)
            limit = backend.concurrency if own or concurrency is None else concurrency
            lanes[id(backend)] = self.lane(backend, limit)
        return lanes

    def lane(self, backend: Backend, limit: int) -> Lane:
        if id(backend) not in self._lanes:
            self._lanes[id(backend)] = Lane(limit)
        return self._lanes[id(backend)]


class _StartFailed(Exception):
    """A backend's start failed at its first node: the run's error (raised as the backend's own)."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


class Runner:
    """Runs case graphs against bound backends, with a shared cache.

    `frozen_roles` lists roles whose nodes must come from the cache (re-judging an existing run
    re-runs only the judge); a miss there is recorded as a failure instead of a call.
    `phase` (``--phase``), when given, lists the only roles whose nodes may call a backend: a
    node of another role that is not cached stays ``pending`` (and so do the nodes that need
    it), so a Slurm phase holds only its own model's GPUs; a later run picks the case up.
    """

    def __init__(
        self,
        bindings: Bindings,
        cache: Cache,
        *,
        seed: int = 0,
        concurrency: int | None = None,
        retry: RetryPolicy = RetryPolicy(),
        events: EventLog | None = None,
        progress: Progress | None = None,
        window: int | None = None,
        lanes: LanePool | None = None,
        frozen_roles: frozenset[str] = frozenset(),
        phase: frozenset[str] | None = None,
    ) -> None:
        self.bindings = bindings
        self.cache = cache
        self.seed = seed
        self.retry = retry
        self.events = events or EventLog(None)
        self.progress = progress or Progress("", enabled=False)
        self.stats = RunStats()
        self.frozen_roles = frozen_roles
        self.phase = phase
        self._pool = pool = lanes or LanePool()
        self._lanes = pool.lanes_for(bindings, concurrency)
        total = sum(l.limit for l in self._lanes.values()) or 1
        self.window = window or max(32, 4 * total)
        self.inputs = InputReader(cache)
        self._services = Services(cache, self.inputs, self.stats, self.events, self.progress, retry, seed)
        self._inflight = pool.inflight
        self._queue: deque[tuple[_CaseRun, str]] = deque()
        self._draining = False
        #: each backend's identity per role as keys hold it, made at its first key (settled before the run starts)
        self._identities: dict[tuple[int, str | None], str] = {}
        #: in a run made of passes (`next_pass`): what a node's computation gave in an earlier pass, by
        #: (case id, node id) (None: a result, in the store; else the failure), and the nodes whose
        #: failure is replayed now
        self._earlier: dict[tuple[str, str], Outcome | None] | None = None
        self._replayed: set[tuple[str, str]] = set()
        #: role -> nodes the phase held back, ready but of another role (this pass's)
        self.held_back: Counter[str] = Counter()

    def next_pass(self, phase: frozenset[str] | None) -> None:
        """Ready the runner to run the same cases again, computing only the nodes of `phase`'s roles
        (a run that takes turns: its generator's pass, then its judge's, `umni.run.turns.plan_stages`).
        What an earlier pass computed counts as computed, not cached, and a failure stays that
        failure without its backend, released since, being called again; node counts start afresh
        so that each node is counted once, by the last pass (calls and usage add up)."""
        if self._earlier is None:
            self._earlier = {}
        self.phase = phase
        self.stats.statuses.clear()
        self.stats.failures.clear()
        self.stats.role_statuses.clear()
        self.held_back.clear()

    # ------------------------------------------------------------------ public
    async def run(self, jobs: Iterable[CaseJob], on_case_done: CaseDone | None = None) -> RunStats:
        """Run every case; `on_case_done` is called as each case's last node finishes. A backend
        starts (loads its weights, opens its connections) when its first node misses the cache, not
        before: a rerun whose nodes are all cached, or a swap of one role, loads no other model."""
        self._active = 0
        self._admitting = False
        self._on_done = on_case_done
        self._pending: Iterator[CaseJob] = iter(jobs)
        self._exhausted = False
        self._all_done = anyio.Event()
        self._tasks = NodeTasks()
        try:
            await self._tasks.run(self._admit_until_all_close)
        except BaseExceptionGroup as group:
            start = next((e for e in group.exceptions if isinstance(e, _StartFailed)), None)
            if start is not None:  # as a start before the run raised it: the backend's own error
                raise start.error from None
            raise one_error(group) from None
        return self.stats

    async def run_graph(self, graph: Graph) -> CaseResult[Any]:
        """Run one graph and return its outcomes (custom graphs, tests): a complete unit of work,
        its backends started before and closed after."""
        result: CaseResult[Any] = CaseResult({}, graph.handles)
        try:
            await self.run([CaseJob(0, graph.case_id, lambda: graph)], lambda job, g, outcomes: result.update(outcomes))
        finally:
            for backend in self.bindings.unique():
                await backend.ensure_closed()
        return result

    # --------------------------------------------------------------- scheduling
    async def _admit_until_all_close(self) -> None:
        """The run ends when its cases close, not when its tasks end: a node may be waiting on work
        another runner (a sweep's other run) is doing, with no task of ours running."""
        self._admit()
        await self._all_done.wait()

    def _admit(self) -> None:
        # Cases whose nodes are all cached finish inside this loop; the flag keeps that from
        # recursing once per case (the loop itself picks up the freed places).
        if self._admitting:
            return
        self._admitting = True
        try:
            while self._active < self.window:
                job = next(self._pending, None)
                if job is None:
                    self._exhausted = True
                    break
                graph = job.build()
                order = graph.validate(self.bindings.backends)
                run = _CaseRun(job, graph, order)
                self._active += 1
                if not order:
                    self._case_finished(run)
                    continue
                self._queue.extend((run, nid) for nid in order if run.waiting[nid] == 0)
        finally:
            self._admitting = False
        self._drain()  # the roots of every case admitted here: one wave
        if self._exhausted and self._active == 0:
            self._all_done.set()

    def _ready(self, run: _CaseRun, nid: str) -> None:
        """Queue a node whose inputs are done; see `_drain`."""
        self._queue.append((run, nid))
        self._drain()

    def _drain(self) -> None:
        """Start the queued nodes, a wave at a time: every node queued so far is keyed, the cache
        rows of all their keys are read in one query, then each node is settled in queue order (as
        if one by one); the nodes that settling makes ready form the next wave. A loop, not
        recursion, so a chain of hundreds of cached nodes resolves without growing the call stack."""
        if self._draining:
            return
        self._draining = True
        try:
            while self._queue:
                wave = [(run, nid, self._guarded(run, nid, functools.partial(self._start_node, run, run.graph.nodes[nid])))
                        for run, nid in self._queue]
                self._queue.clear()
                rows = self.cache.get_many([s.key for _, _, s in wave if isinstance(s, _Lookup) and s.read])
                given: set[str] = set()
                for run, nid, step in wave:
                    if isinstance(step, Outcome):
                        self._finish(run, step)
                    elif isinstance(step, _Lookup):
                        hit = rows.get(step.key) if step.read else None
                        if hit is not None and step.key in given:  # two nodes of the wave share a key: a copy each
                            hit = copy.deepcopy(hit)
                        given.add(step.key)
                        self._step(run, nid, functools.partial(step.settle, hit))
        finally:
            self._draining = False

    def _step(self, run: _CaseRun, nid: str, step: Callable[[], Outcome | None]) -> None:
        """Take a node a step on; what the step settles (an outcome) finishes the node."""
        outcome = self._guarded(run, nid, step)
        if isinstance(outcome, Outcome):
            self._finish(run, outcome)

    def _guarded(self, run: _CaseRun, nid: str, step: Callable[[], Outcome | _Lookup | None]) -> Outcome | _Lookup | None:
        """What the step returns; a bug met while preparing the node becomes this node's failure."""
        try:
            return step()
        except StorageError:
            raise
        except Exception as exc:  # a bug met while preparing this node: this node's failure only
            if nid in run.outcomes:  # raised after the node finished (recording its case): not the node's
                raise
            return failed(nid, "internal", f"{type(exc).__name__}: {exc}")

    def _start_node(self, run: _CaseRun, node: Node) -> Outcome | _Lookup | None:
        """Settle the node at once (blocked, skipped, unkeyable), or key it: its cache row is read
        with its wave's (`_Lookup`), or, from a network store, in a task."""
        blocked = blocked_by(run.outcomes, node)
        if blocked is not None:
            return Outcome(node.id, blocked)
        if node.when is not None and (gated := gate(self.inputs, run.outcomes, node)) is not None:
            return gated
        kind = get_kind(node.kind)
        backend = self.bindings[node.role] if node.role else None
        try:
            key = node_key_with(node, backend, self._identities, lambda: self.inputs.fingerprints(run.outcomes, node), self.seed)
        except KEY_FAULTS as exc:
            return unkeyable(node.id, exc)
        policy = kind.cache_policy(node)
        if policy.read and not getattr(self.cache, "inline_reads", True):  # a network store: look up in a task
            self._tasks.start(self._look_up, run, node, key, kind, backend, policy)
            return None
        return _Lookup(key, policy.read, functools.partial(self._settle, run, node, key, kind, backend, policy))

    async def _look_up(self, run: _CaseRun, node: Node, key: str, kind: Kind, backend: Backend | None, policy: CachePolicy) -> None:
        """The cache lookup of a network store, off the scheduling path, with the hit's image checked
        in a thread when the blob store is remote; then settle as `_start_node` does."""
        hit = await self.cache.lookup(key)
        checked = hit is not None and not self.cache.blobs.inline_checks
        if checked:
            assert hit is not None
            hit = hit if await anyio.to_thread.run_sync(self.inputs.blobs_present, hit) else None
        self._step(run, node.id, lambda: self._settle(run, node, key, kind, backend, policy, hit, checked=checked))

    def _settle(self, run: _CaseRun, node: Node, key: str, kind: Kind, backend: Backend | None, policy: CachePolicy,
                hit: dict[str, Any] | None, *, checked: bool = False) -> Outcome | None:
        """After the lookup: what an earlier pass made, a hit, a refusal (frozen role, another phase), shared
        work, or a lane slot. `checked`: the hit's image was already found in the blob store (`_look_up`)."""
        if self._earlier is not None and (run.job.case_id, node.id) in self._earlier:
            earlier = self._earlier[run.job.case_id, node.id]
            if earlier is not None:
                self._replayed.add((run.job.case_id, node.id))
                return replace(earlier, node=node.id)
            if hit is not None:
                return Outcome(node.id, "computed", output=hit, fingerprint=kind.fingerprint(hit))
        if hit is not None and (checked or self.inputs.blobs_present(hit)):
            self.events.emit("node.cached", case=run.job.case_id, node=node.id, key=key)
            return Outcome(node.id, "cached", output=hit, fingerprint=kind.fingerprint(hit))
        if node.role in self.frozen_roles:
            message = f"node '{node.id}' (role {node.role}) has no cached result, and this run may not call role '{node.role}'"
            return failed(node.id, "input", message)
        if self.phase is not None and node.role is not None and node.role not in self.phase:
            self.held_back[node.role] += 1
            return Outcome(node.id, "pending")  # another phase's work: left for a later run
        if key in self._inflight:  # the same work is already running for another node: share it
            self._inflight[key].append((self, run, node.id))
            return None
        self._inflight[key] = []
        lane = self._pool.compute if backend is None else self._lanes[id(backend)]
        task = functools.partial(self._execute, run, node, key, kind, backend, policy)
        lane.submit(self._tasks, (run.job.position, run.order[node.id]), next(self._pool.seq), task)
        return None

    def _finish(self, run: _CaseRun, outcome: Outcome, spent: dict[str, Any] | None = None) -> None:
        run.outcomes[outcome.node] = outcome
        self.stats.statuses[outcome.status] += 1
        node = run.graph.nodes[outcome.node]
        self.stats.role_statuses[node.role or node.kind, outcome.status] += 1
        self.progress.bump(outcome.status)
        if outcome.failure is not None:
            self.stats.failures[outcome.failure.kind] += 1
            if (run.job.case_id, outcome.node) in self._replayed:  # logged by the pass that met it
                self._replayed.discard((run.job.case_id, outcome.node))
            else:
                fields = {f"failure_{k}": v for k, v in outcome.failure.to_json().items()}
                self.events.emit("node.failed", case=run.job.case_id, node=outcome.node, **fields, **(spent or {}))
        for child in run.dependents[outcome.node]:
            run.waiting[child] -= 1
            if run.waiting[child] == 0:
                self._ready(run, child)
        if len(run.outcomes) == len(run.graph.nodes) and not run.closed:
            self._case_finished(run)

    def _case_finished(self, run: _CaseRun) -> None:
        run.closed = True
        self._active -= 1
        self.progress.cases_done += 1
        self.events.emit("case.done", case=run.job.case_id, statuses=dict(Counter(o.status for o in run.outcomes.values())))
        if self._on_done is not None:
            self._on_done(run.job, run.graph, CaseResult(run.outcomes, run.graph.handles))
        if not self._admitting:
            self._admit()
        elif self._exhausted and self._active == 0:
            self._all_done.set()

    # ----------------------------------------------------------------- execution
    async def _execute(
        self, run: _CaseRun, node: Node, key: str, kind: Kind, backend: Backend | None, policy: CachePolicy, place: Place
    ) -> Callable[[], Coroutine[Any, Any, None]] | None:
        """Run the node's kind (in its lane); a failure finishes the node here, an output is handed
        back as the step that stores it, to run once the lane's slot is free. The backend starts at
        its first node; a failure to start is the run's error, not this node's."""
        if backend is not None:
            try:
                await backend.ensure_started()
            except Exception as exc:
                raise _StartFailed(exc) from exc
        self.progress.bump("running")
        started = time.monotonic()
        ctx = KindContext(node, backend, run.outcomes, self._services, run.job.case_id, place)
        try:
            await self.inputs.decode_ahead(run.outcomes, node)
            output = (await kind.execute(ctx)).model_dump()
        except StorageError:  # the disk failed, not the node: stop the run, record nothing
            raise
        except Exception as exc:
            self._settled(run, key, failure(node.id, exc, ctx.calls or 1), ctx.spent())
            return None
        finally:
            self.progress.bump("running", -1)
        return functools.partial(self._keep, run, node, key, kind, backend, policy, output, started, ctx)

    async def _keep(self, run: _CaseRun, node: Node, key: str, kind: Kind, backend: Backend | None, policy: CachePolicy,
                    output: dict[str, Any], started: float, ctx: KindContext) -> None:
        """Store what the node made (the row that won, if another process stored the key first); finish it."""
        try:
            if policy.write:
                output = await self.cache.store(key, node.kind, output, replace=not policy.read, backend=backend)
            outcome = Outcome(node.id, "computed", output=output, fingerprint=kind.fingerprint(output))
        except StorageError:
            raise
        except Exception as exc:  # an output that cannot be stored: this node's failure only
            outcome = failed(node.id, "internal", f"the output cannot be stored: {type(exc).__name__}: {exc}")
        seconds = round(time.monotonic() - started, 4)
        self.events.emit("node.done", case=run.job.case_id, node=node.id, role=node.role, key=key, calls=ctx.calls, seconds=seconds, **ctx.spent())
        self._settled(run, key, outcome)

    def _settled(self, run: _CaseRun, key: str, outcome: Outcome, spent: dict[str, Any] | None = None) -> None:
        """Finish the node, and every node of any runner that was waiting on the same work; `spent`
        (backend and usage of a failed computation) goes into the node's failure event."""
        waiters = self._inflight.pop(key, [])
        self._remember(run, outcome)
        self._finish(run, outcome, spent)
        for other_runner, other_run, other_id in waiters:
            status: Status = "cached" if outcome.ok else "failed"
            shared = replace(outcome, node=other_id, status=status)
            other_runner._remember(other_run, shared)
            other_runner._finish(other_run, shared)

    def _remember(self, run: _CaseRun, outcome: Outcome) -> None:
        """In a run made of passes, what this pass computed or failed, for the passes after it (a
        node that shared another's result finds it in the store then, as it would have)."""
        if self._earlier is not None and outcome.status != "cached":
            self._earlier[run.job.case_id, outcome.node] = None if outcome.ok else outcome
