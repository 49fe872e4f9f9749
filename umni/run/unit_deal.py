"""A sweep's work units and how they are dealt to the tasks of a split sweep (`umni.run.units` has
the plan and the records): plain data and arithmetic, importable without pydantic, so a task that
reads its units from the plan (`umni.run.done_task`) need not load it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import NotRequired

from typing_extensions import TypedDict  # pydantic reads UnitEntry inside UnitPlan (Python 3.11)

from umni.util.sharding import Shard


class UnitEntry(TypedDict):
    """A unit in the sweep's plan (``units/plan.json``)."""

    unit: str
    run: int
    #: the case shard I/N, None for the whole run
    shard: str | None
    out: str
    #: the phase (index into the sweep file's `phases:`) when runs are cut into phases
    phase: NotRequired[int]


@dataclass(frozen=True)
class Unit:
    """Work unit `index` (0-based): run `run` of the sweep, case shard `shard` (None: the whole run),
    the roles of phase `phase` (None: every role; see `umni.run.sweep_jobs`)."""

    index: int
    run: int
    shard: Shard | None
    out: Path  # the run directory the unit writes (every phase of a run's shard writes the same one)
    phase: int | None = None

    @property
    def name(self) -> str:
        return f"u{self.index:05d}"

    def describe(self) -> UnitEntry:
        entry: UnitEntry = {"unit": self.name, "run": self.run, "shard": str(self.shard) if self.shard else None, "out": str(self.out)}
        if self.phase is not None:
            entry["phase"] = self.phase
        return entry


def plan(outs: list[Path], shards: int, phases: list[list[int]] | None = None) -> list[Unit]:
    """Every unit of a sweep whose runs write `outs`, each split into `shards` case shards and, with
    `phases` (each run's phase indices), into one unit per phase."""
    units: list[Unit] = []
    for run, out in enumerate(outs):
        for k in range(1, shards + 1):
            shard = Shard(k, shards) if shards > 1 else None
            for phase in phases[run] if phases is not None else [None]:
                units.append(Unit(len(units), run, shard, shard.directory(out) if shard else out, phase))
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
