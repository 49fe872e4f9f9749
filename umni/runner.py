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

import heapq
import itertools
import math
import sys
import time
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio
from PIL import Image
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt, stop_before_delay
from tenacity.wait import wait_exponential_jitter

from .artifacts import ImageRef, encode_for_store, fingerprint
from .backends import Backend
from .bindings import Bindings
from .errors import BackendError, ConfigError, DegenerateOutput, UmniError, InputError, InvalidAnswer, OutputFailure, ParseFailure, StorageError
from .events import EventLog
from .graph import Graph, ImageFile, Node, Ref
from .keys import node_key
from .outcomes import Failure, Outcome
from .progress import Progress
from .roles import Usage
from .store import Cache

#: Smallest side an image may have and still be scored.
MIN_IMAGE_SIDE = 8


@dataclass(frozen=True)
class RetryPolicy:
    """Bounds on retrying one call: attempts, total time, and the backoff between tries."""

    max_attempts: int = 5
    budget_seconds: float = 600.0
    initial_wait: float = 1.0
    max_wait: float = 60.0
    jitter: float = 1.0
    parse_retries: int = 2
    #: Longest one attempt may take before it counts as a (retryable) failure; None: no limit.
    attempt_timeout: float | None = 3600.0

    def wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        retry_after = getattr(exc, "retry_after", None)
        if retry_after is not None:
            return min(float(retry_after), self.max_wait)
        return wait_exponential_jitter(initial=self.initial_wait, max=self.max_wait, jitter=self.jitter)(state)


def content_fingerprint(output: dict[str, Any], kind: str | None = None) -> str:
    """What a node's output contributes to the keys of nodes that read it: its content only.

    An image is its hash; bookkeeping such as usage counts is left out, so the same image reached
    through a different call still lets everything downstream come from the cache. A judge's
    output counts by its parsed value only: the same verdict in other words (or after another
    number of parse attempts) is the same input downstream.
    """
    if "image" in output:
        return "image:" + output["image"]["sha256"]
    if kind == "judge":
        return fingerprint({"judge_value": output.get("value")})
    return fingerprint({k: v for k, v in output.items() if k != "usage"})


def json_output(value: Any, where: str = "value") -> Any:
    """`value` as plain JSON data, numpy scalars and arrays converted; TypeError names what is not.

    A compute function's result is stored, hashed into downstream keys and written to results, so
    it must be JSON: a numpy number becomes the Python number, an array a (nested) list."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        if isinstance(value, numpy.generic):
            return json_output(value.item(), where)
        if isinstance(value, numpy.ndarray):
            if value.dtype.kind not in "biuf":
                raise TypeError(f"{where} is a numpy array of dtype {value.dtype}, which is not JSON")
            return value.tolist()
    if isinstance(value, (list, tuple)):
        return [json_output(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        bad = [k for k in value if not isinstance(k, str)]
        if bad:
            raise TypeError(f"{where} has a key {bad[0]!r} that is not a string")
        return {k: json_output(v, f"{where}[{k!r}]") for k, v in value.items()}
    raise TypeError(f"{where} is a {type(value).__module__}.{type(value).__qualname__}, which is not JSON")


def _storage_fault(group: BaseExceptionGroup) -> StorageError | None:
    """The first StorageError inside a task group's exception group: a disk fault stops the run
    with that one error, not with a traceback of every task it interrupted."""
    for exc in group.exceptions:
        if isinstance(exc, StorageError):
            return exc
        if isinstance(exc, BaseExceptionGroup):
            found = _storage_fault(exc)
            if found is not None:
                return found
    return None


def _check_usage(usage: Usage) -> None:
    """Refuse usage counts that are not finite non-negative integers (unknown, None, is allowed):
    a server reporting -5 or Infinity tokens is misbehaving, and its counts would corrupt the run's
    totals and cost, so the call is a backend failure rather than a silently summed number."""
    for name, value in vars(usage).items():
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise BackendError(f"the backend reported an invalid usage count: {name}={value!r}", retryable=False)


def _retryable(exc: BaseException) -> bool:
    return isinstance(exc, BackendError) and exc.retryable


@dataclass
class RunStats:
    """What this invocation did: node statuses, failures by kind, calls and usage per role."""

    statuses: Counter[str] = field(default_factory=Counter)
    failures: Counter[str] = field(default_factory=Counter)
    calls: Counter[str] = field(default_factory=Counter)
    usage: dict[str, Usage] = field(default_factory=dict)
    started: float = field(default_factory=time.time)

    def add_usage(self, role: str, usage: Usage) -> None:
        self.usage.setdefault(role, Usage(calls=0)).add(usage)


@dataclass
class CaseJob:
    """One case to run: its position (for ordering), id, and how to build its graph."""

    position: int
    case_id: str
    build: Callable[[], Graph]


CaseDone = Callable[[CaseJob, Graph, dict[str, Outcome]], None]


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


class _Lane:
    """A backend's concurrency limit and the ready nodes waiting for a slot."""

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self.running = 0
        self.waiting: list[tuple[tuple[int, int], int, Callable[[], Awaitable[None]]]] = []


class LanePool:
    """One lane per backend instance. Runners that share a pool (the runs of a sweep) share each
    backend's concurrency limit instead of multiplying it."""

    def __init__(self) -> None:
        self._lanes: dict[int, _Lane] = {}
        self.compute = _Lane(1 << 30)
        #: cache key -> nodes (of any runner in the pool) waiting for the same work to finish
        self.inflight: dict[str, list[tuple["Runner", "_CaseRun", str]]] = {}
        #: tie-break of equal priorities in the lanes; shared, since the lanes are (never compare tasks)
        self.seq = itertools.count()

    def lane(self, backend: Backend, limit: int) -> _Lane:
        if id(backend) not in self._lanes:
            self._lanes[id(backend)] = _Lane(limit)
        return self._lanes[id(backend)]


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
        pool = lanes or LanePool()
        self._lanes: dict[int, _Lane] = {}
        for backend in bindings.unique():
            limit = backend.concurrency if "concurrency" in backend.spec.options or concurrency is None else concurrency
            self._lanes[id(backend)] = pool.lane(backend, limit)
        self._compute_lane = pool.compute
        total = sum(l.limit for l in self._lanes.values()) or 1
        self.window = window or max(32, 4 * total)
        self._file_refs: dict[tuple[str, int, int], ImageRef] = {}
        self._seq = pool.seq
        self._inflight = pool.inflight
        self._queue: deque[tuple[_CaseRun, str]] = deque()
        self._draining = False

    # ------------------------------------------------------------------ public
    async def run(self, jobs: Iterable[CaseJob], on_case_done: CaseDone | None = None) -> RunStats:
        """Run every case; `on_case_done` is called as each case's last node finishes."""
        for backend in self.bindings.unique():
            await backend.ensure_started()
        pending: Iterator[CaseJob] = iter(jobs)
        self._active = 0
        self._admitting = False
        self._on_done = on_case_done
        self._pending = pending
        self._exhausted = False
        self._all_done = anyio.Event()
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                self._admit()
                # Stay open until every case is closed: some nodes may be waiting on work that
                # another runner (a sweep's other run) is doing, with no task of ours running.
                await self._all_done.wait()
        except BaseExceptionGroup as group:
            fault = _storage_fault(group)
            if fault is not None:
                raise fault from None
            if len(group.exceptions) == 1 and isinstance(group.exceptions[0], UmniError):
                raise group.exceptions[0] from None  # e.g. a case graph that does not validate: one line
            raise
        return self.stats

    async def run_graph(self, graph: Graph) -> dict[str, Outcome]:
        """Run a single graph and return its outcomes (for custom graphs and tests).

        Backends are started before and closed after, so this is a complete unit of work.
        """
        result: dict[str, Outcome] = {}

        def done(job: CaseJob, g: Graph, outcomes: dict[str, Outcome]) -> None:
            result.update(outcomes)

        try:
            await self.run([CaseJob(0, graph.case_id, lambda: graph)], done)
        finally:
            for backend in self.bindings.unique():
                await backend.ensure_closed()
        return result

    # --------------------------------------------------------------- scheduling
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
                for nid in [n for n in order if run.waiting[n] == 0]:
                    self._ready(run, nid)
        finally:
            self._admitting = False
        if self._exhausted and self._active == 0:
            self._all_done.set()

    def _ready(self, run: _CaseRun, nid: str) -> None:
        """Queue a node whose inputs are done; the queue is drained in a loop, not by recursion, so
        a chain of hundreds of cached nodes resolves without growing the call stack."""
        self._queue.append((run, nid))
        if self._draining:
            return
        self._draining = True
        try:
            while self._queue:
                self._start(*self._queue.popleft())
        finally:
            self._draining = False

    def _start(self, run: _CaseRun, nid: str) -> None:
        try:
            self._start_node(run, nid)
        except StorageError:
            raise
        except Exception as exc:  # a bug met while preparing this node: this node's failure only
            if nid in run.outcomes:  # raised after the node finished (recording its case): not the node's
                raise
            self._finish(run, Outcome(nid, "failed", failure=Failure("internal", f"{type(exc).__name__}: {exc}")))

    def _start_node(self, run: _CaseRun, nid: str) -> None:
        node = run.graph.nodes[nid]
        blocked = self._blocked_by(run, node)
        if blocked is not None:
            self._finish(run, Outcome(nid, blocked))
            return
        if node.when is not None:
            try:
                go = bool(node.when(**self._input_values(run, node), **self._gate_values(run, node)))
            except Exception as exc:  # a condition that crashes is a bug in the graph: record it
                self._finish(run, Outcome(nid, "failed", failure=Failure("internal", f"condition failed: {exc!r}")))
                return
            if not go:
                self._finish(run, Outcome(nid, "skipped"))
                return
        try:
            key = node_key(node, self._backend_for(node), self._input_fingerprints(run, node), self.seed)
        except FileNotFoundError as exc:
            self._finish(run, Outcome(nid, "failed", failure=Failure("input", str(exc))))
            return
        except InputError as exc:  # a case image that cannot be decoded: this node's input failure
            self._finish(run, Outcome(nid, "failed", failure=Failure("input", exc.describe())))
            return
        except ConfigError as exc:  # e.g. a callable that cannot be fingerprinted
            self._finish(run, Outcome(nid, "failed", failure=Failure("internal", str(exc))))
            return
        except (TypeError, ValueError) as exc:  # a parameter or const that is not JSON
            message = f"the node's parameters cannot be keyed: {exc}"
            self._finish(run, Outcome(nid, "failed", failure=Failure("internal", message)))
            return
        hit = self.cache.get(key)
        if hit is not None and self._blobs_present(hit):
            self.events.emit("node.cached", case=run.job.case_id, node=nid, key=key)
            self._finish(run, Outcome(nid, "cached", output=hit, fingerprint=content_fingerprint(hit, node.kind)))
            return
        if node.role in self.frozen_roles:
            message = f"node '{nid}' (role {node.role}) has no cached result, and this run may not call role '{node.role}'"
            self._finish(run, Outcome(nid, "failed", failure=Failure("input", message)))
            return
        if self.phase is not None and node.role is not None and node.role not in self.phase:
            self._finish(run, Outcome(nid, "pending"))  # another phase's work: left for a later run
            return
        if key in self._inflight:  # the same work is already running for another node: share it
            self._inflight[key].append((self, run, nid))
            return
        self._inflight[key] = []
        backend = self._backend_for(node)
        lane = self._compute_lane if backend is None else self._lanes[id(backend)]
        priority = (run.job.position, run.order[nid])

        async def task() -> None:
            await self._execute(run, node, key)

        if lane.running < lane.limit:
            lane.running += 1
            self._tg.start_soon(self._in_lane, lane, task)
        else:
            heapq.heappush(lane.waiting, (priority, next(self._seq), task))

    async def _in_lane(self, lane: _Lane, task: Callable[[], Awaitable[None]]) -> None:
        while True:
            await task()
            if not lane.waiting:
                lane.running -= 1
                return
            _, _, task = heapq.heappop(lane.waiting)

    def _finish(self, run: _CaseRun, outcome: Outcome) -> None:
        run.outcomes[outcome.node] = outcome
        self.stats.statuses[outcome.status] += 1
        self.progress.bump(outcome.status)
        if outcome.failure is not None:
            self.stats.failures[outcome.failure.kind] += 1
            self.events.emit(
                "node.failed", case=run.job.case_id, node=outcome.node, **{f"failure_{k}": v for k, v in outcome.failure.to_json().items()}
            )
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
            self._on_done(run.job, run.graph, run.outcomes)
        if not self._admitting:
            self._admit()
        elif self._exhausted and self._active == 0:
            self._all_done.set()

    # ---------------------------------------------------------------- inputs
    def _backend_for(self, node: Node) -> Backend | None:
        return self.bindings[node.role] if node.role else None

    def _blocked_by(self, run: _CaseRun, node: Node) -> str | None:
        for ref in node.refs():
            if ref.optional:
                continue
            status = run.outcomes[ref.node].status
            if status in ("failed", "blocked"):
                return "blocked"
            if status == "skipped":
                return "skipped"
            if status == "pending":
                return "pending"
        return None

    def _gate_values(self, run: _CaseRun, node: Node) -> dict[str, Any]:
        return self._values(run, node.gate)

    def _input_values(self, run: _CaseRun, node: Node) -> dict[str, Any]:
        return self._values(run, node.inputs)

    def _values(self, run: _CaseRun, refs: dict[str, Ref]) -> dict[str, Any]:
        values = {}
        for name, ref in refs.items():
            outcome = run.outcomes[ref.node]
            values[name] = self._plain_value(outcome) if outcome.ok else None
        return values

    def _plain_value(self, outcome: Outcome) -> Any:
        image = outcome.image
        if image is not None:
            return self.cache.blobs.open(image)
        return outcome.value

    def _file_ref(self, item: ImageFile) -> ImageRef:
        stat = Path(item.path).stat()
        memo = (str(item.path), stat.st_mtime_ns, stat.st_size)
        if memo not in self._file_refs:
            self._file_refs[memo] = self.cache.blobs.put_file(Path(item.path))
        return self._file_refs[memo]

    def _input_fingerprints(self, run: _CaseRun, node: Node) -> dict[str, Any]:
        def one(item: Any) -> Any:
            # each part carries its type, so a text equal to an image's hash is not that image
            if isinstance(item, Ref):
                outcome = run.outcomes[item.node]
                return {"node_output": outcome.fingerprint if outcome.ok else None}
            if isinstance(item, ImageFile):
                return {"case_image": self._file_ref(item).sha256}
            if isinstance(item, str):
                return {"text": item}
            return {type(item).__name__: item}

        return {
            "prompt": [one(p) for p in node.prompt],
            "images": [one(p) for p in node.images],
            "inputs": {name: one(ref) for name, ref in sorted(node.inputs.items())},
        }

    def _blobs_present(self, output: dict[str, Any]) -> bool:
        image = output.get("image")
        return image is None or self.cache.blobs.verify(image["sha256"])

    def _load_image(self, run: _CaseRun, item: ImageFile | Ref) -> Image.Image:
        if isinstance(item, ImageFile):
            return self.cache.blobs.open(self._file_ref(item))
        outcome = run.outcomes[item.node]
        if outcome.image is None:
            raise ValueError(f"node '{item.node}' did not produce an image")
        return self.cache.blobs.open(outcome.image)

    def _parts(self, run: _CaseRun, node: Node) -> list[str | Image.Image]:
        parts: list[str | Image.Image] = []
        for item in node.prompt:
            if isinstance(item, str):
                parts.append(item)
            elif isinstance(item, ImageFile):
                parts.append(self._load_image(run, item))
            else:
                outcome = run.outcomes[item.node]
                if not outcome.ok:
                    continue  # an optional part whose node was skipped or failed
                if outcome.image is not None:
                    parts.append(self.cache.blobs.open(outcome.image))
                else:
                    parts.append(str(outcome.value))
        return parts

    # ----------------------------------------------------------------- execution
    async def _execute(self, run: _CaseRun, node: Node, key: str) -> None:
        self.progress.bump("running")
        started = time.monotonic()
        attempts = Counter[str]()
        try:
            output = await self._produce(run, node, attempts)
        except StorageError:  # the disk failed, not the node: stop the run, record nothing
            raise
        except OutputFailure as exc:
            outcome = Outcome(node.id, "failed", failure=Failure(exc.kind, str(exc), attempts["calls"] or 1, raw=exc.raw))
        except BackendError as exc:
            outcome = Outcome(node.id, "failed", failure=Failure("backend", str(exc), attempts["calls"] or 1))
        except InputError as exc:  # bad case data met while computing: the user's to fix, not a bug
            outcome = Outcome(node.id, "failed", failure=Failure("input", exc.describe(), attempts["calls"] or 1))
        except Exception as exc:  # a backend or compute bug: recorded against this node, the run goes on
            outcome = Outcome(node.id, "failed", failure=Failure("internal", f"{type(exc).__name__}: {exc}", attempts["calls"] or 1))
        else:
            try:
                # the row that won (another process may have stored this key first)
                output = await self.cache.store(key, node.kind, output)
                outcome = Outcome(node.id, "computed", output=output, fingerprint=content_fingerprint(output, node.kind))
            except StorageError:
                raise
            except Exception as exc:  # an output that cannot be stored: this node's failure only
                outcome = Outcome(node.id, "failed", failure=Failure("internal", f"the output cannot be stored: {type(exc).__name__}: {exc}"))
            self.events.emit(
                "node.done",
                case=run.job.case_id,
                node=node.id,
                role=node.role,
                key=key,
                calls=attempts["calls"],
                seconds=round(time.monotonic() - started, 4),
            )
        finally:
            self.progress.bump("running", -1)
        waiters = self._inflight.pop(key, [])
        self._finish(run, outcome)
        for other_runner, other_run, other_id in waiters:
            status = "cached" if outcome.ok else "failed"
            other_runner._finish(other_run, replace(outcome, node=other_id, status=status))

    async def _call(self, node: Node, attempts: Counter[str], fn: Callable[[], Awaitable[Any]]) -> Any:
        """One backend call under the retry policy; counts every attempt as a call."""
        role = node.role or "compute"

        def before_sleep(state: RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome else None
            self.progress.bump("retrying")
            self.events.emit("node.retry", node=node.id, attempt=state.attempt_number, error=str(exc))

        async for attempt in AsyncRetrying(
            stop=stop_after_attempt(self.retry.max_attempts) | stop_before_delay(self.retry.budget_seconds),
            wait=self.retry.wait,
            retry=retry_if_exception(_retryable),
            before_sleep=before_sleep,
            reraise=True,
        ):
            with attempt:
                attempts["calls"] += 1
                self.stats.calls[role] += 1
                if attempt.retry_state.attempt_number > 1:
                    self.progress.bump("retrying", -1)
                reply = await self._attempt(fn)
                usage = getattr(reply, "usage", None)
                if isinstance(usage, Usage):
                    _check_usage(usage)
                    self.stats.add_usage(role, usage)
                return reply
        raise AssertionError("unreachable")  # pragma: no cover

    async def _attempt(self, fn: Callable[[], Awaitable[Any]]) -> Any:
        if self.retry.attempt_timeout is None:
            return await fn()
        try:
            with anyio.fail_after(self.retry.attempt_timeout):
                return await fn()
        except TimeoutError:
            raise BackendError(f"no answer within {self.retry.attempt_timeout:g} s", retryable=True) from None

    def _seed(self, node: Node, extra: int = 0) -> int:
        return (self.seed * 1_000_003 + node.repeat * 1009 + extra) % (2**31)

    async def _produce(self, run: _CaseRun, node: Node, attempts: Counter[str]) -> dict[str, Any]:
        backend = self._backend_for(node)
        if node.kind == "compute":
            assert node.fn is not None
            attempts["calls"] += 1
            value = node.fn(**node.params.get("const", {}), **self._input_values(run, node))
            return {"value": json_output(value, f"the value returned by compute node '{node.id}'")}
        assert backend is not None
        b: Any = backend
        if node.kind in ("generate", "edit"):
            if node.kind == "generate":
                parts = self._parts(run, node)
                reply = await self._call(node, attempts, lambda: b.generate(parts, seed=self._seed(node)))
            else:
                images = [self._load_image(run, item) for item in node.images]
                instruction = " ".join(p for p in self._parts(run, node) if isinstance(p, str))
                reply = await self._call(node, attempts, lambda: b.edit(images, instruction, seed=self._seed(node)))
            ref = await self._store_image(reply.image)
            return {"image": ref.model_dump(), "usage": asdict(reply.usage)}
        if node.kind == "answer":
            options = list(node.params["options"])
            parts = self._parts(run, node)
            reply = await self._call(node, attempts, lambda: b.choose(parts, options, seed=self._seed(node)))
            if reply.index is None or not 0 <= reply.index < len(options):
                raise InvalidAnswer(f"the answer names no valid option (of {len(options)})", raw=reply.text)
            return {"index": reply.index, "option": options[reply.index], "text": reply.text, "mode": reply.mode}
        if node.kind == "respond":
            parts = self._parts(run, node)
            max_tokens = int(node.params.get("max_tokens", 512))
            reply = await self._call(node, attempts, lambda: b.respond(parts, max_tokens=max_tokens, seed=self._seed(node)))
            return {"text": reply.text}
        if node.kind == "judge":
            return await self._judge(run, node, b, attempts)
        if node.kind == "tool":
            return {"value": await self._tool(run, node, b, attempts)}
        raise ValueError(f"unknown node kind {node.kind}")

    async def _judge(self, run: _CaseRun, node: Node, backend: Any, attempts: Counter[str]) -> dict[str, Any]:
        assert node.parse is not None
        parts = self._parts(run, node)
        max_tokens = int(node.params.get("max_tokens", 1024))
        last: OutputFailure | None = None
        for parse_try in range(1 + self.retry.parse_retries):
            seed = self._seed(node, parse_try)
            reply = await self._call(node, attempts, lambda: backend.respond(parts, max_tokens=max_tokens, seed=seed))
            try:
                value = node.parse(reply.text)
            except (ParseFailure, InvalidAnswer) as exc:  # out of format or out of range: ask again, boundedly
                last = type(exc)(str(exc), raw=reply.text)
                self.events.emit("node.unparsed", node=node.id, attempt=parse_try + 1, error=str(exc))
                continue
            return {"text": reply.text, "value": value, "parse_attempts": parse_try + 1}
        assert last is not None
        raise last

    async def _tool(self, run: _CaseRun, node: Node, backend: Any, attempts: Counter[str]) -> Any:
        image = self._load_image(run, node.images[0])
        if node.role == "ocr":
            lines = await self._call(node, attempts, lambda: backend.read_text(image))
            return [asdict(line) for line in lines]
        if node.role == "detect":
            labels = list(node.params["labels"])
            found = await self._call(node, attempts, lambda: backend.detect(image, labels))
            return [asdict(d) for d in found]
        if node.role == "embed":
            vectors = await self._call(node, attempts, lambda: backend.embed([image]))
            return [float(x) for x in vectors[0]]
        raise ValueError(f"unknown tool role {node.role}")

    async def _store_image(self, image: Image.Image | None) -> ImageRef:
        """Check and store a produced image; PNG encoding runs in a worker thread (Pillow releases
        the GIL there), so a large image does not hold up every other node."""
        if image is None or image.width < MIN_IMAGE_SIDE or image.height < MIN_IMAGE_SIDE:
            size = "no image" if image is None else f"{image.width}x{image.height}"
            raise DegenerateOutput(f"the model returned a degenerate image ({size}; need at least {MIN_IMAGE_SIDE}px a side)")
        stored, data = await anyio.to_thread.run_sync(encode_for_store, image)
        return self.cache.blobs.put_png(data, image.width, image.height, decoded=stored)
