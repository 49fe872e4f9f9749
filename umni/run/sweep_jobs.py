"""The Slurm jobs of a split sweep: each work unit's resource class, the arrays and their tasks.

A sweep file may give Slurm resources per model binding (``resources:``, keyed by a spec exactly as
written under ``models:`` or as a value under ``roles:``) and cut each run into ``phases:`` (lists
of roles, e.g. generation before judging). A unit (a run's case shard in one phase) asks for the
resources of the bindings its phase calls, merged field by field; a binding given as ``none`` is
served elsewhere (an API judge) and asks for nothing, so a unit that calls only such bindings asks
for no GPU even when ``slurm:`` gives one. Units of one phase and one resource class form one Slurm
array; with ``group: model`` a task runs every unit of one binding (all protocols, all case shards,
at most ``max_units_per_task``), so the model loads once per task instead of once per unit.

Every process reading the same sweep file computes the same arrays, so an array task finds its
units from the array's name and its task number alone (`umni sweep FILE --task NAME:T`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from umni.run.slurm_resources import GPU_OPTIONS
from umni.run.sweep_file import SweepFile, combinations, phase_roles
from umni.util.errors import InputError

if TYPE_CHECKING:
    from umni.run.units import Unit


@dataclass(frozen=True)
class ArrayJob:
    """One Slurm array: the units of one phase (index into `phases`, 0 without phases) and one
    resource class, dealt to its tasks (task t runs ``tasks[t-1]``)."""

    name: str
    phase: int
    options: tuple[tuple[str, str], ...]
    tasks: tuple[tuple[Unit, ...], ...]


def unit_bindings(sweep: SweepFile, unit: Unit) -> tuple[str, ...]:
    """The specs (as written in the sweep file) whose backends the unit's phase calls."""
    from umni.protocols.protocol import get_protocol

    protocol, model, roles, _ = combinations(sweep)[unit.run]
    called = get_protocol(protocol).roles if unit.phase is None else phase_roles(sweep, unit)
    specs = {roles.get(role, model) for role in called}
    return tuple(sorted(s for s in specs if s is not None))


def unit_options(sweep: SweepFile, unit: Unit, path: Path) -> dict[str, str]:
    """The sbatch options of the unit's jobs: `slurm:`'s, then the merged resources of its bindings.
    Two bindings asking different values of one field cannot share a job: refused, naming both."""
    defaults = {k: str(v) for k, v in sweep.slurm.items() if k != "max_jobs"}
    bindings = unit_bindings(sweep, unit)
    if bindings and all(b in sweep.resources and sweep.resources[b] is None for b in bindings):
        return {k: v for k, v in defaults.items() if k not in GPU_OPTIONS}  # served elsewhere: no GPU
    merged: dict[str, str] = {}
    asked_by: dict[str, str] = {}
    for spec in bindings:
        given = sweep.resources.get(spec)
        for key, value in (given.options() if given is not None else {}).items():
            if key in merged and merged[key] != value:
                where = f"phase {','.join(phase_roles(sweep, unit))}, " if unit.phase is not None else ""
                raise InputError(
                    f"'{asked_by[key]}' asks {key}={merged[key]} and '{spec}' asks {key}={value} for the same work "
                    f"unit ({where}run {unit.run}): one Slurm job cannot ask both; give them the same {key} or put "
                    "their roles in different `phases:`",
                    path=path, field=f"resources.{spec}.{key}",
                )
            merged[key] = value
            asked_by[key] = spec
    return {**defaults, **merged}


def arrays(sweep: SweepFile, units: list[Unit], path: Path) -> list[ArrayJob]:
    """The sweep's Slurm arrays in submission order (phase by phase), each with its tasks' units."""
    classes: dict[tuple[int, tuple[tuple[str, str], ...]], list[Unit]] = {}
    for unit in units:
        phase = unit.phase or 0
        key = (phase, tuple(sorted(unit_options(sweep, unit, path).items())))
        classes.setdefault(key, []).append(unit)
    jobs = []
    counted: dict[int, int] = {}
    for (phase, options), members in sorted(classes.items(), key=lambda item: (item[0][0], item[1][0].index)):
        counted[phase] = counted.get(phase, 0) + 1
        label = "-".join(sweep.phases[phase]) if sweep.phases else "units"
        jobs.append(ArrayJob(f"{label}-{counted[phase]}", phase, options, _tasks(sweep, members)))
    return jobs


def _tasks(sweep: SweepFile, units: list[Unit]) -> tuple[tuple[Unit, ...], ...]:
    """One unit per task, or with ``group: model`` every unit of one binding set per task (in chunks
    of `max_units_per_task`), so its model loads once."""
    if sweep.group == "unit":
        return tuple((u,) for u in units)
    by_binding: dict[tuple[str, ...], list[Unit]] = {}
    for unit in units:
        by_binding.setdefault(unit_bindings(sweep, unit), []).append(unit)
    size = sweep.max_units_per_task or max(len(g) for g in by_binding.values())
    return tuple(tuple(group[i : i + size]) for group in by_binding.values() for i in range(0, len(group), size))


def find_task(jobs: list[ArrayJob], text: str) -> tuple[ArrayJob, tuple[Unit, ...]]:
    """The array and units of ``NAME:T`` (`umni sweep --task`; T counts from 1, as an array task id)."""
    name, _, number = text.rpartition(":")
    job = next((j for j in jobs if j.name == name), None)
    if job is None:
        known = f"arrays: {', '.join(j.name for j in jobs)}; give NAME:T, e.g. {jobs[0].name}:1" if jobs else "it has no work unit"
        raise InputError(f"no array '{name}' in this sweep ({known})", field="--task")
    if not number.isdigit() or not 1 <= int(number) <= len(job.tasks):
        raise InputError(f"array '{name}' has tasks 1 to {len(job.tasks)}, not '{number}'", field="--task")
    return job, job.tasks[int(number) - 1]
