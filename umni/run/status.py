"""`umni status DIR`: where a split evaluation stands, read from the files its processes write.

For a sweep folder: each work unit is done, running (with the age of its heartbeat; stale when it
is older than three heartbeats, so its process is likely gone) or pending, with the totals of the
finished units. For a run directory: the run and each of its shard directories, with the cases
finished in its ``run.db`` and the age of its last event. Nothing is changed and no lock is taken.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from umni.run.units import HEARTBEAT_S, UnitBook
from umni.util.errors import InputError


@dataclass
class Status:
    """What `umni status` prints: one line per unit or run directory, then the totals."""

    lines: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    totals: dict[str, int] = field(default_factory=dict)


def status_of(path: Path, now: float | None = None) -> Status:
    now = time.time() if now is None else now
    if (path / "units" / "plan.json").is_file():
        return _sweep_status(path, now)
    if (path / "run.json").is_file() or any(path.parent.glob(f"{path.name}-shard*of*")):
        return _run_status(path, now)  # a run directory, or the one its shards will assemble into
    raise InputError("not a split sweep's folder (no units/plan.json) nor a run directory (no run.json)", path=path)


def _sweep_status(path: Path, now: float) -> Status:
    book = UnitBook(path)
    status = Status(counts={"done": 0, "running": 0, "stale": 0, "pending": 0})
    for unit in book.read_plan():
        record = book.record(unit["unit"]) or {}
        state = record.get("state", "pending")
        where = unit["out"] + (f" (shard {unit['shard']})" if unit.get("shard") else "")
        if state == "running":
            age = now - float(record.get("heartbeat", 0))
            state = "stale" if age > 3 * HEARTBEAT_S else "running"
            where += f", heartbeat {age:.0f}s ago on {record.get('host')} pid {record.get('pid')}"
            if record.get("slurm_job"):
                where += f" (Slurm job {record['slurm_job']})"
        elif state == "done":
            for key, value in (record.get("counts") or {}).items():
                if isinstance(value, int):
                    status.totals[key] = status.totals.get(key, 0) + value
        status.counts[state] = status.counts.get(state, 0) + 1
        status.lines.append(f"{unit['unit']}  {state:8} {where}")
    return status


def _run_status(path: Path, now: float) -> Status:
    status = Status(counts={"done": 0, "running": 0, "pending": 0})
    dirs = [path, *sorted(path.parent.glob(f"{path.name}-shard*of*"))]
    for folder in dirs:
        if not (folder / "run.json").is_file():
            continue
        complete, total = _cases(folder)
        events = folder / "events.jsonl"
        age = now - events.stat().st_mtime if events.is_file() else None
        summary = _summary(folder)
        if summary is not None and complete == total:
            state = "done"
            for key, value in summary.get("counts", {}).items():
                if isinstance(value, int) and folder == path:
                    status.totals[key] = value
        elif age is not None and age < 3 * HEARTBEAT_S:
            state = "running"
        else:
            state = "pending"
        status.counts[state] += 1
        last = f", last event {age:.0f}s ago" if age is not None else ""
        status.lines.append(f"{folder.name}  {state:8} {complete}/{total} cases finished{last}")
    return status


def _cases(folder: Path) -> tuple[int, int]:
    """(complete, recorded) cases of a run directory's run.db, read without writing it."""
    db = folder / "run.db"
    if not db.is_file():
        return 0, 0
    connection = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        complete, total = connection.execute("SELECT COALESCE(SUM(complete), 0), COUNT(*) FROM cases").fetchone()
    except sqlite3.Error:
        return 0, 0
    finally:
        connection.close()
    return int(complete), int(total)


def _summary(folder: Path) -> dict[str, Any] | None:
    try:
        return dict(json.loads((folder / "summary.json").read_text()))
    except (FileNotFoundError, ValueError):
        return None
