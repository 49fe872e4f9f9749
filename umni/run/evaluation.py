"""Running a protocol into a run directory: the orchestration behind `umni run` and the Python API.

A run directory holds ``run.json`` (the command that made it), ``run.db`` (finished cases),
``events.jsonl``, and — rewritten whole at the end of every invocation — ``results.jsonl``,
``summary.json`` and ``report.html``. Running the same command into the same directory resumes; a
different command is refused rather than mixed in.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from umni.backends.bindings import Bindings
from umni.backends.contract import Backend
from umni.backends.placement import connect
from umni.backends.roles import DERIVED_ROLES
from umni.engine.kinds.base import RunStats
from umni.engine.runner import CaseJob, LanePool, Runner
from umni.engine.transcript import case_transcript
from umni.graph.graph import Graph, ImageFile
from umni.graph.outcomes import Outcome
from umni.protocols.caseio import pick
from umni.protocols.protocol import CaseSet, Protocol, get_protocol
from umni.reporting.pricing import Price, default_price_file, estimate, load_prices
from umni.run.config import RunConfig, RunRequest  # noqa: F401 - RunRequest: the old name, still importable here
from umni.run.preflight import settle
from umni.run.rundir import RunDir
from umni.run.servers import ServerLog
from umni.run.summary import add_cumulative, build_summary
from umni.run.turns import in_turns, plan_stages
from umni.store.cache import Cache, RunStore
from umni.store.hashing import fingerprint
from umni.store.location import default_cache_dir  # noqa: F401 - also importable from here
from umni.store.runfolder import CaseFiles, Lineage, Manifest, RunFolder, Summary
from umni.store.urls import describe
from umni.util.errors import ConfigError, InputError, UmniError
from umni.util.events import EventLog
from umni.util.filehash import file_sha256, files_sha256
from umni.util.progress import Progress
from umni.util.sharding import Shard, parse_shard
from umni.util.stopping import run_async
from umni.util.version import __version__


class Prepared(NamedTuple):
    """A run's checked input: what `prepare` returns and `evaluate` runs (unpacks as a 4-tuple)."""

    protocol: Protocol[Any, Any, Any, Any]
    options: Any
    case_set: CaseSet[Any]
    bindings: Bindings


@dataclass
class RunResult:
    """Where a run's folder is and what its summary.json says (``result.summary.scores.overall``,
    ``result.summary.counts.cases``)."""

    out: Path
    summary: Summary

    @property
    def folder(self) -> RunFolder:
        return RunFolder(self.out)

    @property
    def report(self) -> Path:
        return self.folder.report_html


def _files_fingerprint(path: Path, referenced: set[Path] = frozenset()) -> str:  # type: ignore[assignment]
    """Content hash of a case file, or of every file in a case folder (names and bytes), and of
    every file the cases reference (images), wherever it lies: replacing any of them is a new case set."""
    if path.is_file():
        own: list[list[str]] = [[path.name, file_sha256(path)]]
    else:
        entries = [p for p in path.rglob("*") if p.is_file() and not any(part.startswith(".") for part in p.relative_to(path).parts)]
        own = files_sha256(entries, root=path)
    outside = files_sha256(sorted({p.resolve() for p in referenced}))
    return fingerprint({"files": own, "referenced": outside})


def _referenced_files(protocol: Protocol[Any, Any, Any, Any], cases: Sequence[Any], options: Any) -> set[Path]:
    """Every file the cases' graphs read (case images); a missing one is left to the node that reads it."""
    found: set[Path] = set()
    for case in cases:
        for node in protocol.build(case, options).nodes.values():
            for part in (*node.prompt, *node.images):
                if isinstance(part, ImageFile) and Path(part.path).is_file():
                    found.add(Path(part.path))
    return found


def prepare(request: RunConfig, *, shared: dict[str, Backend] | None = None) -> Prepared:
    """Everything that can fail on bad input, done before any model is loaded or called."""
    protocol = get_protocol(request.protocol)
    options = protocol.parse_options(dict(request.options))
    path = Path(request.cases) if request.cases else protocol.bundled_cases()
    if not path.exists():
        raise InputError("case file or folder does not exist", path=path)
    bindings = Bindings.from_specs(request.model, request.roles, shared=shared)
    options = protocol.adapt(options, set(bindings.roles()))
    case_set = protocol.load(path, options)
    cases = case_set.cases[: request.limit] if request.limit is not None else case_set.cases
    if cases:
        protocol.build(cases[0], options).validate(bindings.backends)
    needed: set[str] = set()
    for case in cases[1:]:  # every case's roles and code, so a later task cannot stop the run halfway
        graph = protocol.build(case, options)
        graph.validate()  # structure, and every callable fingerprintable (ConfigError naming the node)
        needed |= graph.required_roles()
    problems = protocol.preflight(cases, options)  # local scorer weights, say: refused now, not once per case
    if problems:
        raise ConfigError("\n".join(problems))
    if request.phase:  # a misspelt phase would leave every node pending: refuse it before any work
        known = set(protocol.roles) | needed | set(bindings.roles())
        unknown = sorted(set(request.phase) - known)
        if unknown:
            raise ConfigError(f"--phase {','.join(unknown)}: no such role in protocol '{protocol.name}' (roles: {', '.join(sorted(known))})")
    unbound = {role for role in needed if role not in bindings}  # a derived role (critic) may borrow
    if unbound:
        raise ConfigError(
            f"the cases need role(s) {', '.join(sorted(unbound))}, which the binding does not fill; "
            + " ".join(f"--role {r}=SPEC" for r in sorted(unbound))
        )
    return Prepared(protocol, options, case_set, bindings)




def evaluate(request: RunConfig, prepared: Prepared | None = None) -> RunResult:
    """Run (or resume) a protocol into `request.out`; returns the summary written there.

    `prepared` is what `prepare(request)` returned, when the caller already checked the input.
    """
    ready = prepared if prepared is not None else prepare(request)
    return run_async(lambda: evaluate_async(request, ready))


async def evaluate_async(
    request: RunConfig,
    prepared: Prepared,
    *,
    lanes: LanePool | None = None,
    cache: Cache | None = None,
    frozen_roles: frozenset[str] = frozenset(),
    lineage: Lineage | None = None,
    close_backends: bool = True,
) -> RunResult:
    """The async core of `evaluate`; sweeps call it for many runs at once with shared lanes and cache.

    `lineage` is recorded in run.json and summary.json (a re-judged run names the run it came from).
    `close_backends`: the run owns its backends, so it also loads its Ray pools in turns when they
    do not fit the cluster together (`_compute`); a sweep, which shares them, passes False and takes
    the turns itself (`umni.run.turns.take_turns`).
    """
    protocol, options, case_set, bindings = prepared
    if request.ray:
        connect(request.ray)
    shard = parse_shard(request.shard) if request.shard else None
    out = shard.directory(Path(request.out)) if shard else Path(request.out)
    cases = _cases_of(request, prepared, shard)  # made one at a time as they are read (`CompactCases`)
    served = await settle(bindings)  # before any identity is read: keys and run.json hold what it decided
    manifest = _manifest(request, prepared, cases, shard, lineage, served)
    price_file = request.prices or default_price_file()
    prices = load_prices(price_file) if price_file is not None else None  # a bad price file stops nothing midway
    # the stores open first: a blob or result store that is refused or out of reach leaves no run
    # folder, and the folder's lock can be the store's (a PostgreSQL advisory lock)
    with _cache(request, cache) as store, RunDir.open(out, manifest, store.locks) as run_dir:
        started = time.time()
        done_before = run_dir.store.complete_ids()
        positions = {protocol.case_id(c): i for i, c in enumerate(cases)}
        jobs = _jobs(prepared, cases, positions, done_before)
        run_dir.events.emit("run.start", protocol=protocol.name, bindings=bindings.specs(), cases=len(cases), resumed=len(done_before))
        runner = _runner(request, prepared, store, run_dir, lanes, frozen_roles, cases=len(cases), done=len(cases) - len(jobs))
        servers = ServerLog(run_dir.events, bindings.unique())
        try:
            with runner.progress, servers:
                # a finished run starts no backend: resuming a done sweep loads no model
                record = _recorder(prepared, cases, run_dir)
                if not jobs:
                    stats = runner.stats
                elif close_backends:  # its own backends: its own turns
                    stats = await _compute(request, prepared, runner, jobs, record, run_dir.events)
                else:
                    stats = await runner.run(jobs, record)
        finally:
            if close_backends:
                for backend in bindings.unique():
                    await backend.ensure_closed()
        # the records as the summary and the report read them, streamed from run.db on each reading
        # and without the viewer's transcripts (results.jsonl, with them, is written row by row)
        records = run_dir.store.records_of(positions.keys(), without=("transcript",))
        # nodes of cases finished by an earlier invocation count as reused work, each as its record keeps it
        taken = _cases_taken(request, case_set, cases, shard)
        summary = build_summary(
            protocol, options, case_set, bindings, records, stats, done_before, time.time() - started, taken, seed=request.seed
        )
        servers.add_to(summary)
        summary.label = request.label or _label_before(run_dir.files)
        _account(summary, prices, run_dir, lineage, stats.nodes_by_role())
        run_dir.finish(protocol, summary, records, store.blobs, cases=positions.keys())
        run_dir.events.emit("run.end", counts=summary.counts.model_dump(), failures=summary.failures)
    return RunResult(out, summary)


async def _compute(
    request: RunConfig, prepared: Prepared, runner: Runner, jobs: list[CaseJob],
    record: Callable[[CaseJob, Graph, dict[str, Outcome]], None], events: EventLog,
) -> RunStats:
    """Run the jobs. A run whose Ray pools the cluster cannot hold at once takes turns as a sweep's
    runs do (`umni.run.turns`): one pass over its cases per stage of `plan_stages` (the generator's
    roles, then the judge's), each with only that stage's pools loaded and the others released.
    A first pass with no pool finds which stages have work: a stage runs only when the pass before
    it held back nodes of its roles (a resumed run whose images are all made loads no generator),
    and the stages go round again while one holds back work for another (a judge's verdict that
    drives another edit). Otherwise the runner runs the jobs once, each backend started at its
    first node."""
    bound = _roles_in_order(request, prepared, jobs)
    stages = plan_stages(bound) if request.ray else None
    if stages is None or len(stages) == 1:
        return await runner.run(jobs, record)
    done = runner.progress.cases_done

    async def one(_: int) -> None:
        runner.progress.cases_done = done
        await runner.run(jobs, record)

    anywhere = frozenset.intersection(*(stage.roles or frozenset() for stage in stages))
    runner.next_pass(anywhere)
    await one(0)
    idle, turn = 0, 0
    while idle < len(stages):  # every stage passed over in a row: none has work left
        stage = stages[turn % len(stages)]
        turn += 1
        if not set(runner.held_back) & ((stage.roles or frozenset()) - anywhere):
            idle += 1
            continue
        idle = 0
        runner.next_pass(stage.roles)
        await in_turns(events, [stage.pools], one)
    return runner.stats


def _roles_in_order(request: RunConfig, prepared: Prepared, jobs: list[CaseJob]) -> dict[str, Backend]:
    """The run's roles (those of `--phase` alone, when given) with their backends, in the order the
    first case's graph reaches them, then the others bound: the order a run's stages take."""
    graph = jobs[0].build()
    reached = [role for nid in graph.validate() if (role := graph.nodes[nid].role)]
    bindings = prepared.bindings
    roles = dict.fromkeys([*reached, *bindings.roles(), *(r for r in DERIVED_ROLES if r in bindings)])
    return {role: bindings[role] for role in roles if role in bindings and (not request.phase or role in request.phase)}


def has_work(request: RunConfig, prepared: Prepared) -> bool:
    """Whether running `request` would run any case: false when its run.db already holds every one of
    its cases complete, so a sweep schedules no model for it (`umni.run.turns`)."""
    shard = parse_shard(request.shard) if request.shard else None
    db = RunFolder(shard.directory(Path(request.out)) if shard else Path(request.out)).run_db
    if not db.is_file():
        return True
    try:
        store = RunStore(db)
    except UmniError:  # the run itself reports what is wrong with its run.db
        return True
    try:
        done = store.complete_ids()
    except UmniError:
        return True
    finally:
        store.close()
    protocol = prepared.protocol
    return any(protocol.case_id(c) not in done for c in _cases_of(request, prepared, shard))


def needed_backends(requests: Sequence[RunConfig], prepared: Sequence[Prepared]) -> list[list[Backend]]:
    """The backends each run of a sweep needs loaded: its bindings', or none when it has no case left to run."""
    return [list(p.bindings.unique()) if has_work(r, p) else [] for r, p in zip(requests, prepared, strict=True)]


def _cases_of(request: RunConfig, prepared: Prepared, shard: Shard | None) -> Sequence[Any]:
    """The cases this invocation is responsible for: the first --limit of the set, this shard's share."""
    protocol, _, case_set, _ = prepared
    cases = case_set.cases[: request.limit] if request.limit is not None else case_set.cases
    if shard is None:
        return cases
    return pick(cases, [i for i, c in enumerate(cases) if shard.holds(protocol.case_id(c))])


def _cases_taken(request: RunConfig, case_set: CaseSet[Any], cases: Sequence[Any], shard: Shard | None) -> str | None:
    """What --limit and --shard left of the case set, in the words of the options (None: all of it),
    so an empty headline can say that its categories went missing with the cases left out."""
    total = len(case_set.cases)
    if len(cases) == total:
        return None
    which = "bundled cases" if request.cases is None else "cases"
    limited = request.limit is not None and request.limit < total
    said = f"--limit {request.limit} takes the first {request.limit} of {total} {which}" if limited else ""
    if shard is not None:
        said += f" and --shard {shard} holds {len(cases)} of them" if said else f"--shard {shard} holds {len(cases)} of {total} {which}"
    return said or None


def _manifest(
    request: RunConfig, prepared: Prepared, cases: Sequence[Any], shard: Shard | None, lineage: Lineage | None,
    served: dict[str, dict[str, Any]] | None = None,
) -> Manifest:
    """run.json: the command that makes this run directory what it is, and what the servers behind it
    reported when it started (`served`: their model ids, the image API chosen; not compared on resume)."""
    protocol, options, case_set, bindings = prepared
    files = _files_fingerprint(case_set.path, _referenced_files(protocol, cases, options))
    return Manifest(
        config=request.persisted(),  # verbatim: only what the user set, so a replay sets nothing more
        protocol=protocol.name,
        cases=CaseFiles(path=str(case_set.path.resolve()), fingerprint=files),
        bindings=bindings.specs(),
        identities=bindings.identities(),
        options=options.model_dump(mode="json"),
        seed=request.seed,
        limit=request.limit,
        umni=__version__,
        cache=describe(request.cache) if request.cache else str(default_cache_dir()),
        blobs=describe(request.blobs) if request.blobs else None,
        shard=str(shard) if shard is not None else None,
        lineage=lineage,
        served=served or None,
    )


@contextmanager
def _cache(request: RunConfig, shared: Cache | None) -> Iterator[Cache]:
    """The sweep's shared cache as it is, or the run's own, closed when the run ends."""
    if shared is not None:
        yield shared
        return
    own = Cache(request.cache or default_cache_dir(), blobs=request.blobs)
    try:
        yield own
    finally:
        own.close()


def _jobs(prepared: Prepared, cases: Sequence[Any], positions: dict[str, int], done_before: set[str]) -> list[CaseJob]:
    """One job per case not finished by an earlier invocation, in case-set order; a job's position
    is its case's index in `cases`, which makes the case when the runner admits it."""
    protocol, options, _, _ = prepared

    def build(position: int) -> Graph:
        return protocol.build(cases[position], options)

    return [CaseJob(position, cid, functools.partial(build, position)) for cid, position in positions.items() if cid not in done_before]


def _recorder(prepared: Prepared, cases: Sequence[Any], run_dir: RunDir) -> Callable[[CaseJob, Graph, dict[str, Outcome]], None]:
    """What the runner calls as each case finishes: its record goes into run.db at once."""
    protocol, options, _, _ = prepared

    def case_done(job: CaseJob, graph: Graph, outcomes: dict[str, Outcome]) -> None:
        record = protocol.record(cases[job.position], outcomes, options)
        record["transcript"] = case_transcript(graph, outcomes)  # for the viewer (results.jsonl); never in a cache key
        complete = all(o.status in ("computed", "cached", "skipped") for o in outcomes.values())
        run_dir.store.put(job.case_id, job.position, record, complete)

    return case_done


def _runner(
    request: RunConfig,
    prepared: Prepared,
    cache: Cache,
    run_dir: RunDir,
    lanes: LanePool | None,
    frozen_roles: frozenset[str],
    *,
    cases: int,
    done: int,
) -> Runner:
    protocol, _, _, bindings = prepared
    progress = Progress(f"umni {protocol.name}", enabled=request.progress)
    progress.cases_total = cases
    progress.cases_done = done
    return Runner(
        bindings,
        cache,
        seed=request.seed,
        concurrency=request.concurrency,
        retry=request.retry_policy(),
        events=run_dir.events,
        progress=progress,
        lanes=lanes,
        frozen_roles=frozen_roles,
        phase=frozenset(request.phase) if request.phase else None,
    )


def _label_before(folder: RunFolder) -> str | None:
    """The label the run's summary.json holds: a resume without --label keeps the run's name."""
    if not folder.summary_json.exists():
        return None
    try:
        return folder.read_summary().label
    except InputError:  # an unreadable summary is rewritten by this invocation; it names nothing
        return None


def _account(
    summary: Summary, prices: dict[str, Price] | None, run_dir: RunDir, lineage: Lineage | None,
    nodes: dict[str, dict[str, int]],
) -> None:
    """Totals over every invocation, this invocation's own (its nodes by role among them), cost where
    prices are known, and where the run lives."""
    add_cumulative(summary, run_dir.store.cumulative(), nodes)
    if prices is not None:
        assert summary.this_invocation is not None
        summary.this_invocation.cost = estimate(summary.this_invocation.usage, summary.bindings, prices)
        summary.cost = estimate(summary.usage, summary.bindings, prices)
    run_dir.store.set_cumulative({"calls": summary.calls, "usage": summary.usage})
    summary.run_dir = str(run_dir.path)
    summary.extended = run_dir.extended or None
    summary.lineage = lineage
