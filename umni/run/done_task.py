"""A sweep task whose units are all done, answered from the plan: what a resubmitted array's
finished tasks pay.

A resubmitted Slurm array starts a process for every task again, and most of them find their work
done. Reading the sweep file through its models (the sweep file's, each run's RunConfig, the unit
records') costs pydantic's import and model building, most of such a task's start. The plan
(``units/plan.json``) records the file it was made from (`plan_source`: the sha256 of its bytes, its
path, the working folder, umni's version and commit). While the file is that one, reading it again
gives the plan's units, the weights they were dealt by and the emitted arrays' tasks, so `done_task`
reads those, and the unit records, as plain JSON.

It answers only when every unit the task would run is recorded as done and, for a ``--shard`` task
that finds the whole sweep done, when the sweep was assembled from the records as they are. Anything
else (another file or umni, a record that does not read, a unit to run, a split the running tasks do
not share, a variable `env:` lists that this task lacks) is left to the full path, which runs the
units or reports the problem in its own words. The meaning of a record (done, stale, its split) and
of an assembly being current is defined here once, for both paths (`umni.run.units` uses these).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from umni.run.unit_deal import Unit, select
from umni.store.runfiles import LEADERBOARD_MD, SUMMARY_JSON, SWEEP_JSON
from umni.util.sharding import Shard, parse_shard
from umni.util.version import __version__, source_commit

#: Seconds between heartbeats of a running unit; `umni status` calls one older than 3 of these stale.
HEARTBEAT_S = 30.0
#: Heartbeats missed before a running unit reads stale (its process is likely gone).
STALE_AFTER_BEATS = 3


def unit_done(state: str | None, out: Path) -> bool:
    """A unit is done when its record says so and its run folder's summary is there."""
    return state == "done" and (out / SUMMARY_JSON).is_file()


def unit_stale(state: str | None, heartbeat: float, now: float) -> bool:
    """A running unit whose process stopped beating (it likely died without a word)."""
    return state == "running" and now - heartbeat > STALE_AFTER_BEATS * HEARTBEAT_S


def split_of(part: str | None) -> int | None:
    """N of the sweep shard I/N a record names (None when not recorded)."""
    try:
        return int((part or "").partition("/")[2])
    except ValueError:
        return None


def assembly_current(assembly: Mapping[str, Any] | None, fingerprint: str | None, finished: Mapping[str, float | None], outputs: list[Path]) -> bool:
    """Whether an assembly record (``units/assembled.json``) was made under the plan of `fingerprint`
    from the records' `finished` times as they are now, and its `outputs` are still there."""
    return (
        assembly is not None and assembly.get("fingerprint") == fingerprint and assembly.get("finished") == dict(finished)
        and all(p.is_file() for p in outputs)
    )


def sweep_outputs(out: Path) -> list[Path]:
    """The files of an assembled sweep whose absence has the next task assemble it again."""
    return [out / LEADERBOARD_MD, out / SWEEP_JSON]


def default_out(name: str | None, path: Path) -> Path:
    """A sweep's folder when its file gives no `out:`."""
    return Path("runs") / f"sweep-{name or path.stem}"


def plan_source(path: Path, content: bytes | None = None) -> dict[str, str]:
    """What reading the sweep file at `path` depends on besides the file: its bytes, where it is (its
    `cases:` are relative to it), the working folder (a relative `out:` or store is relative to it)
    and the umni reading it."""
    data = path.read_bytes() if content is None else content
    return {
        "sha256": hashlib.sha256(data).hexdigest(),
        "file": str(path.resolve()),
        "cwd": str(Path.cwd()),
        "umni": f"{__version__}+{source_commit() or 'release'}",
    }


@dataclass(frozen=True)
class DoneTask:
    """A task found to have nothing to do."""

    #: the sweep's folder and store, as its file gives them
    out: Path
    cache: str | None
    #: the task's units (every one done) and the sweep's
    skipped: int
    units: int
    #: every unit of the sweep is done and it was assembled from the records as they are
    assembled: bool


def done_task(path: Path, label: str, *, emitted: bool) -> DoneTask | None:
    """The answer for ``umni sweep PATH --shard LABEL`` (``--task LABEL`` when `emitted`) when the
    plan shows that task has nothing to do; None when the full path must decide."""
    import yaml  # the file's `out:` says where the plan is

    try:
        content = path.read_bytes()
        raw = yaml.safe_load(content)
    except (OSError, yaml.YAMLError):
        return None
    if not isinstance(raw, dict):
        return None
    out, name, cache, env = raw.get("out"), raw.get("name"), raw.get("cache"), raw.get("env", [])
    if not all(isinstance(v, str | None) for v in (out, name, cache)) or not isinstance(env, list):
        return None
    if any(not isinstance(v, str) or v not in os.environ for v in env):
        return None  # the full path refuses the task in its own words
    folder = Path(out) if out is not None else default_out(name, path)
    plan = _json(folder / "units" / "plan.json")
    if plan is None or plan.get("source") != plan_source(path, content):
        return None
    units = _units(plan.get("units"))
    if units is None:
        return None
    found = {u.name: _json(folder / "units" / f"{u.name}.json", missing={}) for u in units}
    records = {name: record for name, record in found.items() if record is not None}
    if len(records) < len(found):
        return None  # a record that does not read: the full path names it
    try:
        mine = _task_units(plan, units, label, emitted, records)
    except (TypeError, ValueError):  # a record's field of another type than umni writes
        return None
    if mine is None or not all(unit_done(records[u.name].get("state"), u.out) for u in mine):
        return None
    assembled = False
    if not emitted and all(unit_done(records[u.name].get("state"), u.out) for u in units):
        finished = {name: record.get("finished") for name, record in records.items()}
        assembled = assembly_current(_json(folder / "units" / "assembled.json"), plan.get("fingerprint"), finished, sweep_outputs(folder))
        if not assembled:
            return None  # the full path assembles the sweep
    return DoneTask(folder, cache, len(mine), len(units), assembled)


def _json(path: Path, missing: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """The JSON object in `path`; `missing` when there is no such file; None when it does not read."""
    try:
        value = json.loads(path.read_bytes())
    except FileNotFoundError:
        return missing
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _units(entries: object) -> list[Unit] | None:
    """The plan's units, or None when an entry is not one as `Unit.describe` writes it."""
    if not isinstance(entries, list):
        return None
    units = []
    try:
        for index, entry in enumerate(entries):
            shard = parse_shard(entry["shard"], {}) if entry["shard"] is not None else None
            unit = Unit(index, int(entry["run"]), shard, Path(entry["out"]), entry.get("phase"))
            if unit.describe() != entry:
                return None
            units.append(unit)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    return units


def _task_units(plan: dict[str, Any], units: list[Unit], label: str, emitted: bool, records: dict[str, dict[str, Any]]) -> list[Unit] | None:
    """The units the task runs: its array task's (kept in the plan by ``--emit slurm``), or its
    sweep shard's dealt by the plan's weights; None when the plan cannot say."""
    if emitted:
        array, _, number = label.rpartition(":")
        tasks = (plan.get("tasks") or {}).get(array)
        if not isinstance(tasks, list) or not number.isdigit() or not 1 <= int(number) <= len(tasks):
            return None
        by_name = {u.name: u for u in units}
        names = tasks[int(number) - 1]
        return [by_name[n] for n in names] if isinstance(names, list) and all(n in by_name for n in names) else None
    try:
        part: Shard = parse_shard(label)
    except ValueError:
        return None
    weights = plan.get("weights") if part.count < len(units) else None
    if part.count > len(units) or (part.count < len(units) and (not isinstance(weights, list) or len(weights) != len(units))):
        return None
    now = time.time()
    for record in records.values():  # units running in another split: the full path refuses this task
        state, split = record.get("state"), split_of(record.get("part"))
        if state == "running" and not unit_stale(state, float(record.get("heartbeat", 0)), now) and split not in (None, part.count):
            return None
    return select(units, part, weights)
