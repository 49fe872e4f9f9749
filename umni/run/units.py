"""A sweep's work units: what each process of a split sweep does, and the record of what is done.

A unit is one run of the sweep, or one case shard of it (``shards: K`` in the sweep file). Units are
numbered in the sweep's own order (protocol, model, roles, seed; then shard), so every process that
reads the same sweep file agrees on the list. Sweep shard I of N takes the units `deal` gives it:
units weighed by their work (cases × nodes per case, read from the case files every machine has)
and dealt heaviest first to the lightest shard, so every process computes the same split and the
shards finish close together (a round-robin deal by unit number left one shard 1.88× the mean
with a few cases per run: the case hash gives one shard of a run 0 cases and another 4).
Each unit keeps a small JSON record under ``<sweep out>/units/``: ``running`` with a heartbeat while
a process works on it, ``done`` once its run directory is written. A unit recorded as done is
skipped when a job is submitted again, and `umni status` reads these records. A process runs a unit
only while it holds the unit's claim (`UnitBook.claim`: a lock in the store's database, or a file
lock with SQLite), so two tasks given the same unit (a resubmitted array while the first still runs,
or tasks that pick units themselves) never run it both: the second skips it.
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict, Unpack, cast

from umni.protocols.protocol import get_protocol
from umni.run.config import RunConfig
from umni.store.hashing import fingerprint
from umni.store.locks import FolderLocks, Held
from umni.store.runfolder import RunFolder
from umni.util.sharding import Shard

#: Seconds between heartbeats of a running unit; `umni status` calls one older than 3 of these stale.
HEARTBEAT_S = 30.0


class UnitEntry(TypedDict):
    """A unit in the sweep's plan (``units/plan.json``)."""

    unit: str
    run: int
    #: the case shard I/N, None for the whole run
    shard: str | None
    out: str


class UnitRecord(UnitEntry, total=False):
    """A unit's record (``units/<unit>.json``), replaced whole at each change of state and heartbeat."""

    state: str  # running or done
    host: str
    pid: int
    heartbeat: float
    started: float
    finished: float
    #: the sweep shard (I/N) running it
    part: str
    #: the finished run's summary.json counts
    counts: dict[str, int]
    slurm_job: str


class UnitUpdate(TypedDict, total=False):
    """What `UnitBook.mark` adds to a unit's record besides its state."""

    started: float
    finished: float
    part: str
    counts: dict[str, int]


@dataclass(frozen=True)
class Unit:
    """Work unit `index` (0-based): run `run` of the sweep, case shard `shard` (None: the whole run)."""

    index: int
    run: int
    shard: Shard | None
    out: Path  # the run directory the unit writes

    @property
    def name(self) -> str:
        return f"u{self.index:05d}"

    def describe(self) -> UnitEntry:
        return {"unit": self.name, "run": self.run, "shard": str(self.shard) if self.shard else None, "out": str(self.out)}


def plan(outs: list[Path], shards: int) -> list[Unit]:
    """Every unit of a sweep whose runs write `outs`, each split into `shards` case shards."""
    units: list[Unit] = []
    for run, out in enumerate(outs):
        for k in range(1, shards + 1):
            shard = Shard(k, shards) if shards > 1 else None
            units.append(Unit(len(units), run, shard, shard.directory(out) if shard else out))
    return units


def deal(units: list[Unit], count: int, weights: list[int] | None = None) -> list[int]:
    """The sweep shard (0-based, of `count`) each unit goes to.

    With weights, the greedy longest-first deal: units in order of weight (heaviest first, ties by
    number), each to the shard with the least work so far (ties: the lowest shard). It depends only
    on the weights, so every machine computes the same split. Without weights, or with at least as
    many shards as units (a Slurm array: task t runs unit t-1), unit i goes to shard i mod count.
    """
    if weights is None or count >= len(units):
        return [u.index % count for u in units]
    loads = [0] * count
    owner = [0] * len(units)
    for unit in sorted(units, key=lambda u: (-weights[u.index], u.index)):
        target = min(range(count), key=lambda k: (loads[k], k))
        owner[unit.index] = target
        loads[target] += weights[unit.index]
    return owner


def select(units: list[Unit], part: Shard, weights: list[int] | None = None) -> list[Unit]:
    """The units sweep shard `part` (I/N) runs (see `deal`)."""
    owner = deal(units, part.count, weights)
    return [u for u in units if owner[u.index] == part.index - 1]


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

    def write_plan(self, units: list[Unit]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        _write_json(self.folder / "plan.json", {"units": [u.describe() for u in units]})

    def read_plan(self) -> list[UnitEntry]:
        try:
            return list(json.loads((self.folder / "plan.json").read_text())["units"])
        except FileNotFoundError:
            return []

    def record(self, name: str) -> UnitRecord | None:
        try:
            return cast(UnitRecord, dict(json.loads((self.folder / f"{name}.json").read_text())))
        except (FileNotFoundError, ValueError):  # a record being replaced reads as none for a moment
            return None

    def is_done(self, unit: Unit) -> bool:
        record = self.record(unit.name)
        return record is not None and record.get("state") == "done" and RunFolder(unit.out).summary_json.is_file()

    def claim(self, unit: Unit, locks: FolderLocks) -> Held | None:
        """Claim `unit` for this process until the claim is released; None when another process holds
        it (it is running the unit). A claimed unit may have been finished meanwhile: check `is_done`."""
        return locks.try_hold(self.folder, f"{unit.name}.lock")

    def mark(self, unit: Unit, state: str, **extra: Unpack[UnitUpdate]) -> None:
        """Replace the unit's record (`extra`: e.g. ``part='2/8'``, the sweep shard running it)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        record: UnitRecord = {**unit.describe(), "state": state, "host": socket.gethostname(), "pid": os.getpid(), "heartbeat": time.time(), **extra}
        job = os.environ.get("SLURM_JOB_ID")
        if job:
            record["slurm_job"] = job
        _write_json(self.folder / f"{unit.name}.json", record)


def _write_json(path: Path, value: Any) -> None:
    """Replace `path` whole (a reader on another machine never sees half a record)."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_text(json.dumps(value, indent=1))
    os.replace(temp, path)
