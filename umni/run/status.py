"""`umni status DIR`: where a split evaluation stands, read from the files its processes write.

For a sweep folder: each work unit is done, running (with the age of its heartbeat; stale when it
is older than three heartbeats, so its process is likely gone), failed (with its error's line) or
pending, with the totals of the finished units; a unit whose record does not read is `unreadable`,
its line naming the file and what to do (`umni status` then exits 2). For a run directory: the
run and each of its shard directories, with the cases finished in its ``run.db`` and the age of
its last event. For a result store (a cache directory,
a .db file, ``postgresql://``): its results per kind, the processes that wrote them (writing when
the last write is younger than three heartbeats) and its blobs (`umni.store.census`). Nothing is
changed and no lock is taken. `Status.to_json` is what the viewer's status page shows.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from umni.run.units import HEARTBEAT_S, UnitBook
from umni.store.census import is_store, take_census
from umni.store.runfolder import RunFolder, Summary
from umni.store.urls import check_results, is_url
from umni.util.errors import InputError
from umni.util.sharding import Shard, shard_folders


@dataclass
class Status:
    """What `umni status` prints: one line per unit, run directory or store writer, then the totals."""

    lines: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    totals: dict[str, int] = field(default_factory=dict)
    #: One entry per line: name, state, detail and age (seconds since its heartbeat or last event/write).
    items: list[dict[str, Any]] = field(default_factory=list)
    kind: str = "sweep"  # sweep, run or store
    totals_label: str = "finished"
    notes: list[str] = field(default_factory=list)  # lines printed after the totals (a store's blobs)

    def add(self, name: str, state: str, detail: str, age: float | None = None, **more: Any) -> None:
        """One line; `more` goes into its item as it is (a shard's ``split``)."""
        self.items.append({"name": name, "state": state, "detail": detail, "age": None if age is None else round(age, 1), **more})
        self.lines.append(f"{name}  {state:8} {detail}")

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "items": self.items, "counts": self.counts, "totals": self.totals,
                "totals_label": self.totals_label, "notes": self.notes}  # fmt: skip


def status_of(location: str | Path, now: float | None = None, *, blobs: str | None = None) -> Status:
    """The status of a sweep folder, a run directory or a result store (`blobs`: a store's blob store)."""
    now = time.time() if now is None else now
    check_results(location)  # a connection string is refused before it is echoed as a path
    path = Path(location)
    if is_url(location) or (not (path / "units").is_dir() and not RunFolder(path).run_json.is_file() and is_store(path)):
        return _store_status(location, blobs, now)
    if (path / "units" / "plan.json").is_file():
        return _sweep_status(path, now)
    if RunFolder(path).run_json.is_file() or shard_folders(path):
        return _run_status(path, now)  # a run directory, or the one its shards will assemble into
    raise InputError(
        "not a split sweep's folder (no units/plan.json), a run directory (no run.json) nor a result store (no cache.db)",
        path=path,
    )


def _store_status(location: str | Path, blobs: str | None, now: float) -> Status:
    census = take_census(location, blobs)
    status = Status(counts={"writing": 0, "idle": 0}, totals=census.kinds, kind="store", totals_label="stored")
    for writer in census.writers:
        age = now - writer.last
        state = "writing" if age < 3 * HEARTBEAT_S else "idle"
        status.counts[state] += 1
        status.add(writer.name(), state, f"{writer.results} results, last write {age:.0f}s ago", age)
    status.notes.append(f"store: {census.location}, {census.results} results")
    if census.blobs is not None:
        status.notes.append(f"blobs: {census.blob_count} images in {census.blobs}")
    return status


def _runner(part: str) -> str:
    """Who ran a unit: an emitted array's task (NAME:T, `umni sweep --task`) or a sweep shard (I/N)."""
    return f"array task {part}" if ":" in part else f"sweep shard {part}"


def _sweep_status(path: Path, now: float) -> Status:
    book = UnitBook(path)
    status = Status(counts={"done": 0, "running": 0, "stale": 0, "failed": 0, "pending": 0})
    for unit in book.read_plan():
        try:
            record = book.record(unit["unit"])
        except InputError as error:  # shown on its line, naming the file and what to do; the others still are
            status.counts["unreadable"] = status.counts.get("unreadable", 0) + 1
            status.add(unit["unit"], "unreadable", error.describe())
            continue
        where = unit["out"] + (f" (shard {unit['shard']})" if unit.get("shard") else "")
        where += f" (phase {unit['phase'] + 1})" if "phase" in unit else ""
        state = "pending" if record is None else "stale" if record.stale(now) else record.state
        if record is not None and record.state in ("running", "failed"):
            if record.state == "failed":
                where += f", failed: {record.error or 'no error recorded'}; {now - record.heartbeat:.0f}s ago"
            else:
                where += f", heartbeat {now - record.heartbeat:.0f}s ago"
            where += f" on {record.host} pid {record.pid}"
            where += f" ({_runner(record.part)})" if record.part else ""
            where += f" (Slurm job {record.slurm_job})" if record.slurm_job else ""
        elif record is not None and record.state == "done":
            where += f" by {_runner(record.part)}" if record.part else ""
            for key, value in (record.counts or {}).items():
                if isinstance(value, int):
                    status.totals[key] = status.totals.get(key, 0) + value
        status.counts[state] = status.counts.get(state, 0) + 1
        status.add(unit["unit"], state, where, None if record is None else now - record.heartbeat)
    lost = status.counts["stale"] + status.counts["failed"]
    if lost:
        status.notes.append(
            f"{lost} unit(s) stale or failed: once the cause is fixed, submit the sweep's tasks again "
            f"(units done are skipped, these run again)"
        )
    return status


def _run_status(path: Path, now: float) -> Status:
    """The run, then its shard directories split by split (1/2 and 2/2 are one set, 1/3 another),
    with a note per split saying how many of its shards are done and whether it is complete."""
    status = Status(counts={"done": 0, "running": 0, "pending": 0}, kind="run")
    _run_line(status, path, path, now)
    splits: dict[int, dict[int, str]] = {}
    for shard, folder in shard_folders(path):
        state = _run_line(status, path, folder, now, split=str(shard.count))
        if state is not None:
            splits.setdefault(shard.count, {})[shard.index] = state
    for count, states in splits.items():
        status.notes.append(_split_note(count, states))
    return status


def _run_line(status: Status, path: Path, folder: Path, now: float, **more: Any) -> str | None:
    """The line of one run directory (`path` itself or one of its shards); its state, None without run.json."""
    files = RunFolder(folder)
    if not files.run_json.is_file():
        return None
    complete, total = _cases(files)
    age = now - files.events_jsonl.stat().st_mtime if files.events_jsonl.is_file() else None
    summary = _summary(files)
    if summary is not None and complete == total:
        state = "done"
        for key, value in summary.counts.model_dump().items():
            if isinstance(value, int) and folder == path:
                status.totals[key] = value
    elif age is not None and age < 3 * HEARTBEAT_S:
        state = "running"
    else:
        state = "pending"
    status.counts[state] += 1
    last = f", last event {age:.0f}s ago" if age is not None else ""
    status.add(folder.name, state, f"{complete}/{total} cases finished{last}", age, **more)
    return state


def _split_note(count: int, states: dict[int, str]) -> str:
    """``split into 3 shards: 1 of 3 done, shard(s) 2/3, 3/3 not run``; ``(complete)`` when all are done."""
    done = sum(1 for s in states.values() if s == "done")
    said = [f"{done} of {count} done"]
    said += [f"{n} {state}" for state in ("running", "pending") if (n := sum(1 for s in states.values() if s == state))]
    missing = [str(Shard(i, count)) for i in range(1, count + 1) if i not in states]
    if missing:
        said.append(f"shard(s) {', '.join(missing)} not run")
    return f"split into {count} shards: " + ", ".join(said) + (" (complete)" if done == count else "")


def _cases(folder: RunFolder) -> tuple[int, int]:
    """(complete, recorded) cases of a run directory's run.db, read without writing it."""
    db = folder.run_db
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


def _summary(folder: RunFolder) -> Summary | None:
    """The run's summary.json; None while there is none (or none that reads: one being replaced)."""
    if not folder.summary_json.is_file():
        return None
    try:
        return folder.read_summary()
    except InputError:
        return None
