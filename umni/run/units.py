"""A sweep's work units: what each process of a split sweep does, and the record of what is done.

A unit is one run of the sweep, or one case shard of it (``shards: K`` in the sweep file). Units are
numbered in the sweep's own order (protocol, model, roles, seed; then shard), so every process that
reads the same sweep file agrees on the list. Sweep shard I of N takes the units `deal` gives it:
units weighed by their work (cases × nodes per case, read from the case files every machine has)
and dealt heaviest first to the lightest shard, so every process computes the same split and the
shards finish close together (a round-robin deal by unit number left one shard 1.88× the mean
with a few cases per run: the case hash gives one shard of a run 0 cases and another 4).
Each unit keeps a small JSON record under ``<sweep out>/units/`` (`UnitRecord`): ``running`` with a
heartbeat while a process works on it (beaten from a thread, so a finish that holds the event loop
still beats), ``done`` once its run directory is written, ``failed`` with the error's line when its
task failed or was stopped. A unit recorded as done is skipped when a job is submitted again (a
failed one runs again), and `umni status` reads these records. A record that does not read as one
is an error naming its file, never taken for a missing one. The plan (``units/plan.json``) keeps
the sweep file's settings that decide its results, and a task whose file says otherwise, or whose
``--shard I/N`` splits the units otherwise than tasks still running, is refused before it writes
anything (`UnitBook.begin`). A process runs a unit
only while it holds the unit's claim (`UnitBook.claim`: a lock in the store's database, or a file
lock with SQLite), so two tasks given the same unit (a resubmitted array while the first still runs,
or tasks that pick units themselves) never run it both: the second skips it.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, TypeVar, Unpack

from pydantic import BaseModel, ConfigDict, JsonValue, ValidationError
from typing_extensions import TypedDict

from umni.run.done_task import (
    HEARTBEAT_S,
    assembly_current,
    plan_source,
    split_of,
    unit_done,
    unit_stale,
)
from umni.run.unit_deal import Unit, UnitEntry, deal, select  # noqa: F401 - deal: importable from here too
from umni.store.hashing import fingerprint
from umni.util.errors import InputError, UmniError
from umni.util.sharding import Shard

if TYPE_CHECKING:
    from umni.run.config import RunConfig
    from umni.store.locks import FolderLocks, Held


UnitState = Literal["running", "done", "failed"]


class UnitRecord(BaseModel):
    """A unit's record (``units/<unit>.json``), replaced whole at each change of state and heartbeat.
    Fields it does not name (a newer umni's) are kept."""

    model_config = ConfigDict(extra="allow")

    unit: str
    run: int
    shard: str | None
    out: str
    #: the phase (index into the sweep file's `phases:`), when runs are cut into phases
    phase: int | None = None
    state: UnitState
    host: str
    pid: int
    heartbeat: float
    started: float | None = None
    finished: float | None = None
    #: the sweep shard (I/N) running it
    part: str | None = None
    #: the finished run's summary.json counts
    counts: dict[str, int | None] | None = None
    slurm_job: str | None = None
    #: why a failed unit failed: one line, secrets masked (`umni.util.secrets.error_line`)
    error: str | None = None

    def stale(self, now: float) -> bool:
        """A running unit whose process stopped beating (it likely died without a word)."""
        return unit_stale(self.state, self.heartbeat, now)

    def split(self) -> int | None:
        """N of the sweep shard I/N running it (None when not recorded)."""
        return split_of(self.part)


class UnitUpdate(TypedDict, total=False):
    """What `UnitBook.mark` adds to a unit's record besides its state."""

    started: float
    finished: float
    part: str
    counts: dict[str, int | None]
    error: str


class UnitPlan(BaseModel):
    """``units/plan.json``: the sweep's units, and what of its file decides their results."""

    units: list[UnitEntry]
    #: the sweep file's settings that decide results (store URLs without credentials); None in a
    #: plan an older umni wrote, which is then taken as it is
    settings: dict[str, JsonValue] | None = None
    fingerprint: str | None = None
    #: the sweep file the plan was made from (`umni.run.done_task.plan_source`): while a task's file
    #: is that one, a task whose units are done reads the plan instead of the file
    source: dict[str, str] | None = None
    #: each emitted array's tasks, each a list of unit names (``--emit slurm``)
    tasks: dict[str, list[list[str]]] | None = None
    #: each unit's work as the first task that dealt them by it weighed it (`unit_weights`): later
    #: tasks deal by these numbers without loading a protocol, and every task deals alike
    weights: list[int] | None = None


class Assembly(BaseModel):
    """``units/assembled.json``: the unit records a sweep was last assembled from (each unit's
    ``finished`` time), under the plan it was made for. A task that finds every unit done and these
    records unchanged does not assemble the sweep again."""

    fingerprint: str | None
    finished: dict[str, float | None]


_Model = TypeVar("_Model", bound=BaseModel)


def _read_model(path: Path, model: type[_Model], remedy: str) -> _Model | None:
    """The file as `model`; None when it does not exist; otherwise an InputError naming it."""
    try:
        return model.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        return None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise InputError(f"not a {model.__name__} ({where + ': ' if where else ''}{first['msg']}); {remedy}", path=path) from None


def unit_weights(units: list[Unit], requests: list[RunConfig]) -> list[int]:
    """Each unit's work: its cases (the run's first `limit`, the shard's share) times the nodes of
    one case's graph. Case sets are loaded once per (protocol, cases, options); nothing is bound,
    so no model loads. A run whose cases cannot be read weighs 1 (its error comes when it runs)."""
    loaded: dict[str, tuple[list[str], int]] = {}
    weights = []
    for unit in units:
        request = requests[unit.run]
        key = fingerprint([request.protocol, str(request.cases), request.options, request.limit])
        if key not in loaded:
            loaded[key] = _case_ids(request)
        ids, nodes = loaded[key]
        held = [i for i in ids if unit.shard is None or unit.shard.holds(i)]
        weights.append(max(1, len(held) * nodes) if ids else 1)
    return weights


def _case_ids(request: RunConfig) -> tuple[list[str], int]:
    from umni.protocols.protocol import get_protocol  # here: a task whose units are done loads no protocol

    try:
        protocol = get_protocol(request.protocol)
        options = protocol.parse_options(dict(request.options))
        cases = protocol.load(Path(request.cases) if request.cases else protocol.bundled_cases(), options).cases
        cases = cases[: request.limit] if request.limit is not None else cases
        nodes = len(protocol.build(cases[0], options).nodes) if cases else 1
        return [protocol.case_id(c) for c in cases], nodes
    except Exception:  # an unreadable case set: reported by the run itself, with its file and line
        return [], 1


class UnitBook:
    """The ``units/`` folder of a sweep: the plan and one record per unit."""

    def __init__(self, sweep_out: Path) -> None:
        self.folder = sweep_out / "units"

    @property
    def plan_json(self) -> Path:
        return self.folder / "plan.json"

    def write_plan(self, units: list[Unit], settings: dict[str, JsonValue] | None = None, source: dict[str, str] | None = None) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        plan = UnitPlan(units=[u.describe() for u in units], settings=settings, fingerprint=None if settings is None else fingerprint(settings), source=source)
        _write_json(self.plan_json, plan.model_dump(exclude_defaults=True))

    def keep_tasks(self, tasks: dict[str, list[list[str]]]) -> None:
        """Keep the emitted arrays' tasks (unit names) in the plan (call after `begin`)."""
        plan = self.plan()
        if plan is not None:
            _write_json(self.plan_json, plan.model_copy(update={"tasks": tasks}).model_dump(exclude_defaults=True))

    def plan(self) -> UnitPlan | None:
        return _read_model(self.plan_json, UnitPlan, "delete it: the next task of the sweep writes it again")

    def weights(self, units: list[Unit], weigh: Callable[[], list[int]]) -> list[int]:
        """The units' weights the plan keeps (call after `begin`); weighed by `weigh` and kept in the
        plan when it has none for these units (written whole: a task reading it sees either)."""
        plan = self.plan()
        if plan is not None and plan.weights is not None and len(plan.weights) == len(units):
            return plan.weights
        weights = weigh()
        if plan is not None and plan.units == [u.describe() for u in units]:
            _write_json(self.plan_json, plan.model_copy(update={"weights": weights}).model_dump(exclude_defaults=True))
        return weights

    @property
    def assembly_json(self) -> Path:
        return self.folder / "assembled.json"

    def mark_assembled(self, units: list[Unit]) -> None:
        """The sweep was assembled from the units' records as they are now."""
        plan = self.plan()
        assembly = Assembly(fingerprint=plan.fingerprint if plan else None, finished=self._finished(units))
        _write_json(self.assembly_json, assembly.model_dump())

    def assembled(self, units: list[Unit], outputs: list[Path]) -> bool:
        """Whether the sweep was assembled from the units' records as they are now (under this plan)
        and its `outputs` are still there: assembling again would write the same files."""
        assembly = _read_model(self.assembly_json, Assembly, "delete it: the next task that finds every unit done assembles the sweep again")
        plan = self.plan()
        return plan is not None and assembly_current(
            None if assembly is None else assembly.model_dump(), plan.fingerprint, self._finished(units), outputs
        )

    def _finished(self, units: list[Unit]) -> dict[str, float | None]:
        records = {u.name: self.record(u.name) for u in units}
        return {name: (r.finished if r is not None else None) for name, r in records.items()}

    def read_plan(self) -> list[UnitEntry]:
        plan = self.plan()
        return [] if plan is None else plan.units

    def record(self, name: str) -> UnitRecord | None:
        return _read_model(self.folder / f"{name}.json", UnitRecord, f"delete it to run unit {name} again")

    def records(self) -> dict[str, UnitRecord]:
        """The record of each unit of the plan that has one."""
        found = {entry["unit"]: self.record(entry["unit"]) for entry in self.read_plan()}
        return {name: record for name, record in found.items() if record is not None}

    def begin(self, units: list[Unit], settings: dict[str, JsonValue], sweep_file: Path, part: Shard | None = None) -> None:
        """Write the plan of a sweep shard task (`part`) or of an emitted job script (None), after
        every check that refuses it, so a refused task changes no file: each record must read, the
        file's settings must be those planned (a changed sweep goes to a new ``out:``; a job script
        may replace the plan while no unit has a record), and `part` must split the units as the
        tasks still running do (another N deals them otherwise) into no more tasks than units."""
        plan = self.plan()
        records = self.records()  # each must read
        if plan is not None and plan.fingerprint is not None and plan.fingerprint != fingerprint(settings):
            if part is not None or records:
                raise self._changed(plan, settings, sweep_file)
        if part is not None:
            self._check_split(part, len(units), records)
        source = plan_source(sweep_file)
        if plan is None or plan.fingerprint != fingerprint(settings) or [u.describe() for u in units] != plan.units:
            self.write_plan(units, settings, source)
        elif plan.source != source:  # the same units from another file (an edited `slurm:` time, say)
            _write_json(self.plan_json, plan.model_copy(update={"source": source, "tasks": None}).model_dump(exclude_defaults=True))

    def _changed(self, plan: UnitPlan, settings: dict[str, JsonValue], sweep_file: Path) -> InputError:
        old = plan.settings or {}
        changed = sorted(k for k in {*old, *settings} if old.get(k) != settings.get(k))
        return InputError(
            f"{', '.join(changed)} changed since this sweep's units were planned ({self.plan_json}): to start "
            f"a new sweep, give the file a new `out:` (finished work still comes from the store); to go on "
            f"with this one, set {'it' if len(changed) == 1 else 'them'} back as the plan's 'settings' record",
            path=sweep_file,
        )

    @staticmethod
    def _check_split(part: Shard, units: int, records: dict[str, UnitRecord]) -> None:
        if part.count > units:
            raise InputError(
                f"--shard {part}: this sweep has {units} units, fewer than {part.count} tasks: the array was made "
                f"for another plan; write its script again (umni sweep FILE --emit slurm) and submit that",
            )
        now = time.time()
        others = {n: r for n, r in records.items() if r.state == "running" and not r.stale(now) and r.split() not in (None, part.count)}
        if others:
            raise InputError(
                f"--shard {part}: unit(s) {', '.join(sorted(others))} are running in sweep shard(s) "
                f"{', '.join(sorted({str(r.part) for r in others.values()}))}, which split the units otherwise; "
                f"give --shard I/{others[min(others)].split()} as they do, or start this split once they are done (or stale)",
            )

    def is_done(self, unit: Unit) -> bool:
        record = self.record(unit.name)
        return record is not None and unit_done(record.state, unit.out)

    def claim(self, unit: Unit, locks: FolderLocks) -> Held | None:
        """Claim `unit` for this process until the claim is released; None when another process holds
        it (it is running the unit). A claimed unit may have been finished meanwhile: check `is_done`."""
        return locks.try_hold(self.folder, f"{unit.name}.lock")

    def mark(self, unit: Unit, state: UnitState, **extra: Unpack[UnitUpdate]) -> None:
        """Replace the unit's record (`extra`: e.g. ``part='2/8'``, the sweep shard running it)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        job = os.environ.get("SLURM_JOB_ID")
        record = UnitRecord.model_validate(
            {**unit.describe(), "state": state, "host": socket.gethostname(), "pid": os.getpid(), "heartbeat": time.time(),
             **extra, **({"slurm_job": job} if job else {})}
        )
        _write_json(self.folder / f"{unit.name}.json", record.model_dump(exclude_defaults=True))


class Heartbeat:
    """Marks a running unit every `HEARTBEAT_S` from a thread of its own while the block runs: the
    unit's finish (summary, tables, report) runs on the event loop and may hold it for longer than
    `STALE_AFTER_BEATS` heartbeats, which would read as a dead process. It stops beating when the
    claim is lost (the unit is another process's then; the event loop's own check stops the run)."""

    def __init__(self, book: UnitBook, unit: Unit, claim: Held, **extra: Unpack[UnitUpdate]) -> None:
        self.book, self.unit, self.claim, self.extra = book, unit, claim, extra
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"umni-heartbeat-{unit.name}", daemon=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()  # no beat after the block: the record's next state is the caller's

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            try:
                self.claim.check()
            except UmniError:
                return
            try:
                self.book.mark(self.unit, "running", **self.extra)
            except OSError:
                continue  # a missed beat (a file system hiccup): the next one tries again


def _write_json(path: Path, value: Any) -> None:
    """Replace `path` whole (a reader on another machine never sees half a record)."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    temp.write_text(json.dumps(value, indent=1))
    os.replace(temp, path)
