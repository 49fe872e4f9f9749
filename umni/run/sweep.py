"""Running a sweep: every run in one process sharing one cache and one set of backends, or its
work units dealt to `umni sweep --shard` tasks (a Slurm array), and the sweep's leaderboard.

The sweep file and what it expands to (runs, work units) are in `umni.run.sweep_file`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from umni.run.done_task import sweep_outputs
from umni.run.slurm_resources import GPU_OPTIONS
from umni.run.sweep_file import (
    SweepFile,
    expand,
    load_sweep,
    planned_settings,
    require_env,
    run_settings,
    unit_request,
    work_units,
)
from umni.run.sweep_jobs import arrays, find_task, unit_bindings
from umni.run.units import HEARTBEAT_S, Heartbeat, Unit, UnitBook, UnitUpdate, select, unit_weights
from umni.store.runfiles import SWEEP_JSON
from umni.util.errors import InputError, StorageError, UmniError
from umni.util.secrets import error_line
from umni.util.sharding import parse_shard
from umni.util.stopping import run_async

# The engine, the backends, the store and the reports are imported where a sweep uses them: a
# sweep task whose units are done exits before it needs any of them (bench/task_start.py).
if TYPE_CHECKING:
    from umni.run.config import RunConfig
    from umni.run.evaluation import RunResult
    from umni.store.cache import Cache
    from umni.store.locks import Held


def _first_umni_error(group: BaseExceptionGroup) -> UmniError | None:
    """The error to report when runs of a sweep fail together: the first umni error, which the CLI
    prints as one line (a storage fault first, as it explains the others)."""
    found: list[UmniError] = []

    def walk(g: BaseExceptionGroup) -> None:
        for exc in g.exceptions:
            if isinstance(exc, BaseExceptionGroup):
                walk(exc)
            elif isinstance(exc, UmniError):
                found.append(exc)

    walk(group)
    storage = [e for e in found if isinstance(e, StorageError)]
    return (storage or found or [None])[0]


def run_sweep(path: Path, *, warn: Callable[[str], None] | None = None, cache: Cache | None = None) -> tuple[Path, list[RunResult]]:
    """Run every run of the sweep in this process; `warn` gets each pre-flight problem (None: no probe).
    `cache`: the store a sweep task already opened (left open), else one opened and closed here."""
    from umni.run.evaluation import prepare

    sweep = load_sweep(path)
    requests = expand(sweep)
    shared: dict[str, Any] = {}
    prepared = [prepare(r, shared=shared) for r in requests]  # every input error before any work
    _preflight(prepared, warn)
    return run_async(lambda: _run_all(sweep, requests, prepared, shared, cache))


async def _run_all(
    sweep: SweepFile, requests: list[RunConfig], prepared: list[Any], shared: dict[str, Any], given: Cache | None
) -> tuple[Path, list[RunResult]]:
    from umni.engine.runner import LanePool
    from umni.run.evaluation import default_cache_dir, evaluate_async, needed_backends
    from umni.run.turns import take_turns
    from umni.store.cache import Cache
    from umni.store.locks import exclusive

    assert sweep.out is not None
    lanes = LanePool()
    cache = given or Cache(sweep.cache or default_cache_dir(), blobs=sweep.blobs)
    results: list[RunResult | None] = [None] * len(requests)

    async def one(index: int) -> None:
        results[index] = await evaluate_async(requests[index], prepared[index], lanes=lanes, cache=cache, close_backends=False)

    try:
        with exclusive(cache.locks, sweep.out, ".sweep.lock", "another umni sweep is running into this folder; wait for it to finish"):
            try:
                await take_turns(sweep.out, sweep.ray, needed_backends(requests, prepared), one)
            finally:  # a crashed sweep still leaves the leaderboard of the runs that finished
                done = [r for r in results if r is not None]
                if done or all(r is not None for r in results):
                    _write_sweep_outputs(sweep.out, done)
    except BaseExceptionGroup as group:
        _raise_one(group)
    finally:
        await _close(shared, None if given else cache)
    return sweep.out, done


async def _close(shared: dict[str, Any], cache: Cache | None) -> None:
    """What a sweep (or a shard of one) opened for all its runs: the shared backends and its own cache."""
    for backend in shared.values():
        await backend.ensure_closed()
    if cache is not None:
        cache.close()


def _raise_one(group: BaseExceptionGroup) -> None:
    """Runs of a sweep that failed together: an interruption as it is, else the first umni error alone."""
    if group.subgroup(lambda e: isinstance(e, KeyboardInterrupt)) is not None:
        raise group  # the CLI reports an interruption as one line
    error = _first_umni_error(group)
    if error is None:
        raise group
    raise error from None


@dataclass
class ShardOutcome:
    """What one `umni sweep --shard I/N` did."""

    ran: list[RunResult]
    skipped: list[Unit]
    units: int
    assembled: Path | None
    #: units another process was running (it held their claims): left to it
    busy: list[Unit] = field(default_factory=list)
    #: the sweep was assembled by an earlier task from the records as they are (not again by this one)
    assembled_before: bool = False


def _preflight(prepared: list[Any], warn: Callable[[str], None] | None) -> None:
    from umni.run.preflight import preflight

    if warn is not None and prepared:
        for problem in preflight(*(p.bindings for p in prepared)):
            warn(problem)


def run_sweep_shard(path: Path, part_text: str, *, warn: Callable[[str], None] | None = None) -> ShardOutcome:
    """Run sweep shard I of N: its share of the work units, each skipped when already done; the last
    shard to finish (any, when they all are) assembles the sweep's leaderboard from the store."""
    sweep = load_sweep(path)
    require_env(sweep)
    try:
        part = parse_shard(part_text)
    except ValueError as exc:
        raise InputError(str(exc), field="--shard") from None
    units = work_units(sweep)
    assert sweep.out is not None
    book = UnitBook(sweep.out)
    book.begin(units, planned_settings(sweep), path, part)  # a refused task writes nothing
    weights = book.weights(units, lambda: unit_weights(units, expand(sweep))) if part.count < len(units) else None
    mine = select(units, part, weights)
    # one store for the units and the assembly (one PostgreSQL connection), opened only when needed
    cache = _open_cache(sweep) if any(not book.is_done(u) for u in mine) else None
    try:
        ran, busy, skipped = _run_these(sweep, str(part), mine, book, warn, cache)
        assembled, before = None, False
        if all(book.is_done(u) for u in units):
            if book.assembled(units, sweep_outputs(sweep.out)):  # a task started again after the last one
                assembled, before = sweep.out, True
            else:
                cache = cache or _open_cache(sweep)
                assembled = _assemble_if_free(path, cache)
                if assembled is not None:
                    book.mark_assembled(units)
    finally:
        if cache is not None:
            cache.close()
    return ShardOutcome(ran, skipped, len(units), assembled, busy, assembled_before=before)


def _open_cache(sweep: SweepFile) -> Cache:
    from umni.run.evaluation import default_cache_dir
    from umni.store.cache import Cache

    return Cache(sweep.cache or default_cache_dir(), blobs=sweep.blobs)


def run_sweep_task(path: Path, task_text: str, *, warn: Callable[[str], None] | None = None) -> ShardOutcome:
    """Run array task ``NAME:T`` of an emitted sweep (`umni.run.sweep_jobs`): its units, each skipped
    when already done. It never assembles: the assemble job does, after every array."""
    sweep = load_sweep(path)
    require_env(sweep)
    units = work_units(sweep)
    assert sweep.out is not None
    _, mine = find_task(arrays(sweep, units, path), task_text)
    book = UnitBook(sweep.out)
    book.begin(units, planned_settings(sweep), path)  # a refused task writes nothing
    ran, busy, skipped = _run_these(sweep, task_text, list(mine), book, warn)
    return ShardOutcome(ran, skipped, len(units), None, busy)


def assemble_sweep(path: Path, *, warn: Callable[[str], None] | None = None) -> tuple[Path, list[RunResult], list[Unit]]:
    """The assemble job: when every unit is done, the sweep written from the store (nothing left to
    compute); otherwise nothing is run and the units not done are returned."""
    sweep = load_sweep(path)
    require_env(sweep)
    assert sweep.out is not None
    book = UnitBook(sweep.out)
    units = work_units(sweep)
    left = [u for u in units if not book.is_done(u)]
    if left:
        return sweep.out, [], left
    out, results = run_sweep(path, warn=warn)
    book.mark_assembled(units)  # a sweep task started again later need not assemble it again
    return out, results, []


def _run_these(
    sweep: SweepFile, label: str, mine: list[Unit], book: UnitBook, warn: Callable[[str], None] | None, cache: Cache | None = None
) -> tuple[list[RunResult], list[Unit], list[Unit]]:
    """Run `mine` (those not done), phase by phase, sharing one set of backends, with the servers of
    the models they call; returns what ran, what another process held and what was already done."""
    todo = [u for u in mine if not book.is_done(u)]
    if not todo:  # a task whose units are done has read the records and nothing more
        return [], [], list(mine)
    from umni.run.evaluation import prepare
    from umni.run.serving import serving

    requests = [unit_request(sweep, u) for u in todo]
    shared: dict[str, Any] = {}
    prepared = [prepare(r, shared=shared) for r in requests]  # every input error before any work
    called = {spec for u in todo for spec in unit_bindings(sweep, u)}
    with serving({spec: serve for spec, serve in sweep.serve.items() if spec in called}):
        _preflight(prepared, warn)  # a served model is probed once its server answers
        ran, busy, finished = run_async(lambda: _run_units(sweep, label, todo, requests, prepared, shared, book, cache))
    skipped = [u for u in mine if u not in busy and u not in finished]
    return ran, busy, skipped


async def _run_units(
    sweep: SweepFile, part: str, units: list[Unit], requests: list[RunConfig], prepared: list[Any],
    shared: dict[str, Any], book: UnitBook, given: Cache | None,
) -> tuple[list[RunResult], list[Unit], list[Unit]]:
    """Run each unit whose claim this process gets, one phase after another; returns what ran, the
    units another process held and the units this process finished."""
    import anyio

    from umni.engine.runner import LanePool
    from umni.run.evaluation import default_cache_dir, evaluate_async, needed_backends
    from umni.run.turns import take_turns
    from umni.store.cache import Cache

    assert sweep.out is not None
    lanes = LanePool()
    cache = given or Cache(sweep.cache or default_cache_dir(), blobs=sweep.blobs)
    results: list[RunResult] = []
    busy: list[Unit] = []
    finished: list[Unit] = []

    async def one(index: int) -> None:
        unit = units[index]
        claim = await anyio.to_thread.run_sync(book.claim, unit, cache.locks)
        if claim is None:
            busy.append(unit)
            return
        try:
            if book.is_done(unit):  # finished by another process between the deal and the claim
                return
            mine: UnitUpdate = {"started": time.time(), "part": part}
            book.mark(unit, "running", **mine)
            try:
                async with anyio.create_task_group() as watch:
                    watch.start_soon(_watch_claim, claim)
                    with Heartbeat(book, unit, claim, **mine):
                        result = await evaluate_async(requests[index], prepared[index], lanes=lanes, cache=cache, close_backends=False)
                    watch.cancel_scope.cancel()
            except BaseException as error:
                _mark_failed(book, unit, claim, error, mine)
                raise
            book.mark(unit, "done", finished=time.time(), counts=result.summary.counts.model_dump(), part=part)
            results.append(result)
            finished.append(unit)
        finally:
            await anyio.to_thread.run_sync(claim.release)

    phases = sorted({u.phase or 0 for u in units})
    try:
        for phase in phases:  # a later phase's nodes need the earlier phase's results
            indices = [i for i, u in enumerate(units) if (u.phase or 0) == phase]
            needed = needed_backends([requests[i] for i in indices], [prepared[i] for i in indices])
            await take_turns(sweep.out, sweep.ray, needed, lambda k, indices=indices: one(indices[k]))  # type: ignore[misc]
    except BaseExceptionGroup as group:
        _raise_one(group)
    finally:
        await _close(shared, None if given else cache)
    return results, busy, finished


async def _watch_claim(claim: Held) -> None:
    """Stop the unit (raise) when its claim was lost across a reconnect: another process runs it."""
    import anyio

    while True:
        await anyio.sleep(HEARTBEAT_S)
        claim.check()


def _mark_failed(book: UnitBook, unit: Unit, claim: Held, error: BaseException, mine: UnitUpdate) -> None:
    """Record why the unit stopped, unless its claim was lost (the record is the new holder's then)."""
    try:
        claim.check()
    except UmniError:
        return
    failure: UnitUpdate = {**mine, "error": _failure_line(error)}
    try:
        book.mark(unit, "failed", **failure)
    except OSError:  # the record cannot be written either (a full disk): it reads stale, and the error is raised
        pass


def _failure_line(error: BaseException) -> str:
    """The line a failed unit's record keeps: the error that stopped it (umni's first, as the CLI
    reports), or that it was stopped from outside (a signal, a time limit, another unit's failure)."""
    if isinstance(error, BaseExceptionGroup):
        errors = [e for e in _leaves(error) if isinstance(e, Exception)]
        error = _first_umni_error(error) or (errors[0] if errors else error)
    if isinstance(error, Exception) and not isinstance(error, BaseExceptionGroup):
        return error_line(error)
    return "stopped before it finished (the task was interrupted or cancelled, or another of its units failed)"


def _leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [error]


def emit_slurm(path: Path, *, warn: Callable[[str], None] | None = None) -> Path:
    """Write the sweep's job scripts under ``<sweep out>/slurm/`` (one per array, and the assemble
    job), ``<sweep out>/submit.sh`` and the unit plan (see `umni.run.slurm`); returns submit.sh.
    `warn` gets one line when the arrays of one phase, running at once, would hold more connections
    than the PostgreSQL store's server admits (or when its limit could not be read)."""
    from umni.run.config import build_config
    from umni.run.slurm import array_script, assemble_script, check_options, connection_note, submit_script

    sweep = load_sweep(path)
    check_options(sweep.slurm)
    units = work_units(sweep)
    for given, source in run_settings(sweep):  # a bad run fails here, not in 64 array tasks
        build_config(given, source=source)
    jobs = arrays(sweep, units, path)  # resources that cannot be expressed are refused here
    assert sweep.out is not None
    book = UnitBook(sweep.out)
    book.begin(units, planned_settings(sweep), path)
    book.keep_tasks({job.name: [[u.name for u in task] for task in job.tasks] for job in jobs})
    folder = sweep.out / "slurm"
    folder.mkdir(parents=True, exist_ok=True)
    name = sweep.name or path.stem
    cap = sweep.slurm.get("max_jobs")
    cap_n = int(cap) if cap is not None else None
    scripts: dict[str, Path] = {}
    for job in jobs:
        scripts[job.name] = folder / f"{job.name}.sbatch"
        scripts[job.name].write_text(array_script(job, sweep_file=path, out=sweep.out, name=name, cap=cap_n, env=sweep.env, cwd=Path.cwd()))
    plain = {k: str(v) for k, v in sweep.slurm.items() if k != "max_jobs" and k not in GPU_OPTIONS}  # it computes nothing
    assemble = folder / "assemble.sbatch"
    assemble.write_text(assemble_script(sweep_file=path, out=sweep.out, name=name, env=sweep.env, options=plain, cwd=Path.cwd()))
    submit = sweep.out / "submit.sh"
    submit.write_text(submit_script(jobs, scripts, assemble, sweep.env))
    submit.chmod(0o755)
    at_once: dict[int, int] = {}
    for job in jobs:
        at_once[job.phase] = at_once.get(job.phase, 0) + min(len(job.tasks), cap_n or len(job.tasks))
    note = connection_note(sweep.cache, max(at_once.values(), default=0))
    if note is not None and warn is not None:
        warn(note)
    return submit


def _assemble_if_free(path: Path, cache: Cache) -> Path | None:
    """Assemble unless another process is assembling this sweep now (it writes the same files)."""
    try:
        out, _ = run_sweep(path, cache=cache)
    except InputError as exc:
        if "another umni sweep is running" in str(exc):
            return None
        raise
    return out


def _write_sweep_outputs(out: Path, done: list[RunResult]) -> None:
    from umni.reporting.leaderboard import build_tables, write_leaderboard
    from umni.reporting.pool_hours import pools_held

    summaries = [r.summary for r in done]
    write_leaderboard(build_tables(summaries), out, tidy=build_tables(summaries, layout="tidy"))
    runs = [{"out": str(r.out), "bindings": r.summary.bindings, "protocol": r.summary.protocol} for r in done]
    pools = pools_held(out)  # what each Ray pool held (`umni.run.turns`); none without placement
    (out / SWEEP_JSON).write_text(json.dumps({"runs": runs, **({"pools": pools} if pools else {})}, indent=2))
    from umni.reporting.sweep_report import write_sweep_report

    write_sweep_report(out, [(r.out, r.summary) for r in done])
