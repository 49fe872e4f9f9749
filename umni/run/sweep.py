"""Sweeps: protocols × models × role bindings × seeds from one YAML file, run as one job.

All runs share one cache, one set of backend instances and one set of concurrency lanes, and run
at the same time: a backend's limit is shared by every run that uses it, and identical work (the
same generated image needed by two runs that differ only in their understander) is done once.
Re-running a sweep file resumes every run; adding a model runs only the new work.

    name: demo
    out: runs/sweep-demo          # default: runs/sweep-<file stem>
    protocols: [umnibench]
    models: [sim/umm]
    roles:                        # role overrides; each entry is one binding variant
      - {}
      - {understand: "sim/umm?skill=0.5"}
    seeds: [0]
    options: {umnibench: {ability: full}}
    cases: {umnibench: path/to/cases.jsonl}
    limit: 10
    concurrency: 4

Models and role bindings can be placed on Ray (issue 14) in a ``placement:`` section keyed by the
spec exactly as written under ``models:`` or as a value under ``roles:``; a role binding's spec is
placed on its own, so a judge can have other replicas than the model it judges:

    ray: auto                     # the cluster ('auto': join a running one or start a local one)
    models: [sim/umm, "diffusers/tiny?steps=2"]
    roles: [{}, {judge: "sim/umm?skill=0.5"}]
    placement:
      sim/umm: {replicas: 2, cpus: 0.5}
      "diffusers/tiny?steps=2": {replicas: 4, gpus: 1, start_timeout: 600, max_restarts: 2}
      "sim/umm?skill=0.5": {replicas: 1}

An entry becomes the spec parameters ``placement=ray&replicas=…`` (the same ones `umni run` takes),
which say where a backend runs and never what it answers: run directories, identities and cache keys
are those of the unplaced sweep, so adding or changing placement resumes the same runs from the
same cache. A ``placement:`` section without ``ray:`` uses ``ray: auto``.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from umni.engine.runner import LanePool
from umni.protocols.caseio import validation_errors
from umni.reporting.leaderboard import build_tables, write_leaderboard
from umni.reporting.pool_hours import pools_held
from umni.run.config import RunConfig, build_config
from umni.run.evaluation import RunResult, default_cache_dir, evaluate_async, prepare
from umni.run.preflight import preflight
from umni.run.slurm import connection_note, slurm_script
from umni.run.sweep_placement import Placement, check_placement, placed
from umni.run.turns import needed_backends, take_turns
from umni.run.units import HEARTBEAT_S, Unit, UnitBook, plan, select, unit_weights
from umni.store.cache import Cache
from umni.store.hashing import fingerprint
from umni.store.locks import Held, exclusive
from umni.store.urls import check_blobs, check_results
from umni.util.errors import ConfigError, InputError, InputErrors, StorageError, UmniError
from umni.util.sharding import Shard, parse_shard
from umni.util.stopping import run_async


class SweepFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str | None = None
    out: Path | None = None
    #: the result store and image store of every run (as `umni run --cache/--blobs`: a path or a URL)
    cache: str | None = None
    blobs: str | None = None
    protocols: list[str] = Field(min_length=1)
    models: list[str | None] = Field(default_factory=lambda: list[str | None]([None]))
    roles: list[dict[str, str]] = Field(default_factory=lambda: [dict[str, str]()])
    seeds: list[int] = Field(default_factory=lambda: [0])
    options: dict[str, dict[str, Any]] = Field(default_factory=dict)
    cases: dict[str, Path] = Field(default_factory=dict)
    limit: int | None = None
    concurrency: int | None = None
    #: Ray cluster for models whose spec says placement=ray ('auto' or an address), as `umni run --ray`
    ray: str | None = None
    #: Ray placement of a model or role binding, keyed by its spec as written in `models:` / `roles:`
    placement: dict[str, Placement] = Field(default_factory=dict)
    #: retry settings of every run (as `umni run --max-attempts/--retry-budget/--call-timeout`)
    max_attempts: int | None = None
    retry_budget: float | None = None
    call_timeout: float | None = None
    #: case shards per run: a split sweep's work units are (run, case shard) pairs (`umni sweep --shard`)
    shards: int = Field(1, ge=1, le=10_000)
    #: `#SBATCH` options of `umni sweep --emit slurm` (e.g. partition, gres, time); max_jobs caps the array
    slurm: dict[str, str | int | float] = Field(default_factory=dict)


def load_sweep(path: Path) -> SweepFile:
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise InputError(f"invalid YAML: {exc}", path=path, line=mark.line + 1 if mark else None) from None
    except OSError as exc:
        raise InputError(f"cannot read the sweep file ({exc.strerror})", path=path) from None
    if not isinstance(raw, dict):
        raise InputError("a sweep file is a YAML mapping (protocols, models, roles, …)", path=path)
    try:
        sweep = SweepFile.model_validate(raw)
    except ValidationError as exc:
        raise InputErrors(validation_errors(exc, path=path, record=None)) from None
    _check_stores(sweep, path)
    base = path.parent
    sweep.cases = {k: (v if v.is_absolute() else base / v) for k, v in sweep.cases.items()}
    if sweep.out is None:
        sweep.out = Path("runs") / f"sweep-{sweep.name or path.stem}"
    if sweep.placement:
        written = {m for m in sweep.models if m is not None} | {s for roles in sweep.roles for s in roles.values()}
        check_placement(sweep.placement, written, path)
        sweep.ray = sweep.ray or "auto"  # placement implies Ray
    return sweep


def _check_stores(sweep: SweepFile, path: Path) -> None:
    """Refuse a `cache:` or `blobs:` that would put a credential in run.json, naming the file and
    the field, before any folder of the sweep is made."""
    for name, check in (("cache", check_results), ("blobs", check_blobs)):
        value = getattr(sweep, name)
        if value is not None:
            try:
                check(value)
            except ConfigError as exc:
                raise InputError(exc.message, path=path, field=name) from None


def expand(sweep: SweepFile) -> list[RunConfig]:
    """One run request per combination, each with its own run directory under the sweep's."""
    return [build_config(given, source=source) for given, source in _combinations(sweep)]


def _combinations(sweep: SweepFile) -> list[tuple[dict[str, Any], str]]:
    """The settings of each run (only what the sweep file sets) and how to name it in an error."""
    requests = []
    seen: dict[Path, str] = {}
    for protocol, model, roles, seed in itertools.product(sweep.protocols, sweep.models, sweep.roles, sweep.seeds):
        if model is None and not roles:
            raise InputError("each run needs a model or role bindings: give `models:` or non-empty `roles:` entries")
        label = fingerprint([model, sorted(roles.items()), seed, sweep.options.get(protocol, {})])[:10]
        assert sweep.out is not None
        what = f"protocol {protocol}, model {model}, roles {roles or '{}'}, seed {seed}"
        if sweep.out / protocol / label in seen:
            raise InputError(f"the sweep lists the same run twice ({what}); remove the repeated model, role binding or seed")
        seen[sweep.out / protocol / label] = what
        given = {
            "protocol": protocol,
            "out": sweep.out / protocol / label,
            "cases": sweep.cases.get(protocol),
            "model": None if model is None else placed(sweep.placement, model),
            "roles": [f"{r}={placed(sweep.placement, s)}" for r, s in sorted(roles.items())] or None,
            "cache": sweep.cache,
            "blobs": sweep.blobs,
            "limit": sweep.limit,
            "concurrency": sweep.concurrency,
            "ray": sweep.ray,
            "seed": seed,
            "options": dict(sweep.options.get(protocol, {})) or None,
            "max_attempts": sweep.max_attempts,
            "retry_budget": sweep.retry_budget,
            "call_timeout": sweep.call_timeout,
            "progress": False,
        }
        # only what the sweep file sets is set, as on the command line (run.json keeps those)
        requests.append(({k: v for k, v in given.items() if v is not None}, f"sweep run ({what})"))
    return requests


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


def work_units(sweep: SweepFile) -> list[Unit]:
    """The sweep's (run, case shard) work units, in an order every process agrees on."""
    assert sweep.out is not None
    return plan([Path(r.out) for r in expand(sweep)], sweep.shards)


def _unit_request(sweep: SweepFile, unit: Unit) -> RunConfig:
    given, source = _combinations(sweep)[unit.run]
    if unit.shard is not None:
        given = {**given, "shard": str(unit.shard)}
    return build_config(given, source=f"{source}, shard {unit.shard}" if unit.shard else source)


def run_sweep(path: Path, *, warn: Callable[[str], None] | None = None) -> tuple[Path, list[RunResult]]:
    """Run every run of the sweep in this process; `warn` gets each pre-flight problem (None: no probe)."""
    sweep = load_sweep(path)
    requests = expand(sweep)
    shared: dict[str, Any] = {}
    prepared = [prepare(r, shared=shared) for r in requests]  # every input error before any work
    _preflight(prepared, warn)
    return run_async(lambda: _run_all(sweep, requests, prepared, shared))


async def _run_all(sweep: SweepFile, requests: list[RunConfig], prepared: list[Any], shared: dict[str, Any]) -> tuple[Path, list[RunResult]]:
    assert sweep.out is not None
    lanes = LanePool()
    cache = Cache(sweep.cache or default_cache_dir(), blobs=sweep.blobs)
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
        await _close(shared, cache)
    return sweep.out, done


async def _close(shared: dict[str, Any], cache: Cache) -> None:
    """What a sweep (or a shard of one) opened for all its runs: the shared backends and the cache."""
    for backend in shared.values():
        await backend.ensure_closed()
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


def _preflight(prepared: list[Any], warn: Callable[[str], None] | None) -> None:
    if warn is not None and prepared:
        for problem in preflight(*(p.bindings for p in prepared)):
            warn(problem)


def run_sweep_shard(path: Path, part_text: str, *, warn: Callable[[str], None] | None = None) -> ShardOutcome:
    """Run sweep shard I of N: its share of the work units, each skipped when already done; the last
    shard to finish (any, when they all are) assembles the sweep's leaderboard from the store."""
    sweep = load_sweep(path)
    try:
        part = parse_shard(part_text)
    except ValueError as exc:
        raise InputError(str(exc), field="--shard") from None
    units = work_units(sweep)
    assert sweep.out is not None
    book = UnitBook(sweep.out)
    book.write_plan(units)
    weights = unit_weights(units, expand(sweep)) if part.count < len(units) else None
    mine = select(units, part, weights)
    todo = [u for u in mine if not book.is_done(u)]
    requests = [_unit_request(sweep, u) for u in todo]
    shared: dict[str, Any] = {}
    prepared = [prepare(r, shared=shared) for r in requests]  # every input error before any work
    _preflight(prepared, warn)
    ran, busy = run_async(lambda: _run_units(sweep, part, todo, requests, prepared, shared, book))
    assembled = None
    if all(book.is_done(u) for u in units):
        assembled = _assemble_if_free(path)
    done_here = {r.out for r in ran}
    skipped = [u for u in mine if u not in busy and u.out not in done_here]
    return ShardOutcome(ran, skipped, len(units), assembled, busy)


async def _run_units(
    sweep: SweepFile, part: Shard, units: list[Unit], requests: list[RunConfig], prepared: list[Any],
    shared: dict[str, Any], book: UnitBook,
) -> tuple[list[RunResult], list[Unit]]:
    """Run each unit whose claim this process gets; returns what ran and the units another process held."""
    assert sweep.out is not None
    lanes = LanePool()
    cache = Cache(sweep.cache or default_cache_dir(), blobs=sweep.blobs)
    results: list[RunResult] = []
    busy: list[Unit] = []

    async def one(index: int) -> None:
        unit = units[index]
        claim = await anyio.to_thread.run_sync(book.claim, unit, cache.locks)
        if claim is None:
            busy.append(unit)
            return
        try:
            if book.is_done(unit):  # finished by another process between the deal and the claim
                return
            book.mark(unit, "running", started=time.time(), part=str(part))
            async with anyio.create_task_group() as beat:
                beat.start_soon(_heartbeat, book, unit, str(part), claim)
                result = await evaluate_async(requests[index], prepared[index], lanes=lanes, cache=cache, close_backends=False)
                beat.cancel_scope.cancel()
            book.mark(unit, "done", finished=time.time(), counts=result.summary.counts.model_dump(), part=str(part))
            results.append(result)
        finally:
            await anyio.to_thread.run_sync(claim.release)

    try:
        await take_turns(sweep.out, sweep.ray, needed_backends(requests, prepared), one)
    except BaseExceptionGroup as group:
        _raise_one(group)
    finally:
        await _close(shared, cache)
    return results, busy


async def _heartbeat(book: UnitBook, unit: Unit, part: str, claim: Held) -> None:
    started = time.time()
    while True:
        await anyio.sleep(HEARTBEAT_S)
        claim.check()  # a claim lost across a reconnect to another process: stop running the unit
        book.mark(unit, "running", started=started, part=part)


def emit_slurm(path: Path, *, warn: Callable[[str], None] | None = None) -> Path:
    """Write ``<sweep out>/sweep.sbatch`` (see `umni.run.slurm`) and the unit plan; returns the script.
    `warn` gets one line when the array's tasks would hold more connections than the PostgreSQL
    store's server admits (or when its limit could not be read)."""
    sweep = load_sweep(path)
    units = work_units(sweep)
    for given, source in _combinations(sweep):  # a bad run fails here, not in 64 array tasks
        build_config(given, source=source)
    assert sweep.out is not None
    UnitBook(sweep.out).write_plan(units)
    script = sweep.out / "sweep.sbatch"
    (sweep.out / "slurm").mkdir(parents=True, exist_ok=True)
    script.write_text(slurm_script(path, sweep.out, sweep.name or path.stem, len(units), sweep.slurm, cwd=Path.cwd()))
    cap = sweep.slurm.get("max_jobs")
    note = connection_note(sweep.cache, min(len(units), int(cap)) if cap is not None else len(units))
    if note is not None and warn is not None:
        warn(note)
    return script


def _assemble_if_free(path: Path) -> Path | None:
    """Assemble unless another process is assembling this sweep now (it writes the same files)."""
    try:
        out, _ = run_sweep(path)
    except InputError as exc:
        if "another umni sweep is running" in str(exc):
            return None
        raise
    return out


def _write_sweep_outputs(out: Path, done: list[RunResult]) -> None:
    summaries = [r.summary for r in done]
    write_leaderboard(build_tables(summaries), out, tidy=build_tables(summaries, layout="tidy"))
    runs = [{"out": str(r.out), "bindings": r.summary.bindings, "protocol": r.summary.protocol} for r in done]
    pools = pools_held(out)  # what each Ray pool held (`umni.run.turns`); none without placement
    (out / "sweep.json").write_text(json.dumps({"runs": runs, **({"pools": pools} if pools else {})}, indent=2))
    from umni.reporting.sweep_report import write_sweep_report

    write_sweep_report(out, [(r.out, r.summary) for r in done])
