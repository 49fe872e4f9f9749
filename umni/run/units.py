"""A sweep's work units: what each process of a split sweep does, and the record of what is done.

A unit is one run of the sweep, or one case shard of it (``shards: K`` in the sweep file). Units are
numbered in the sweep's own order (protocol, model, roles, seed; then shard), so every process that
reads the same sweep file agrees on the list, and sweep shard I of N takes units I-1, I-1+N, … .
Each unit keeps a small JSON record under ``<sweep out>/units/``: ``running`` with a heartbeat while
a process works on it, ``done`` once its run directory is written. A unit recorded as done is
skipped when a job is submitted again, and `umni status` reads these records.
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from umni.util.sharding import Shard

#: Seconds between heartbeats of a running unit; `umni status` calls one older than 3 of these stale.
HEARTBEAT_S = 30.0


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

    def describe(self) -> dict[str, Any]:
        return {"unit": self.name, "run": self.run, "shard": str(self.shard) if self.shard else None, "out": str(self.out)}


def plan(outs: list[Path], shards: int) -> list[Unit]:
    """Every unit of a sweep whose runs write `outs`, each split into `shards` case shards."""
    units: list[Unit] = []
    for run, out in enumerate(outs):
        for k in range(1, shards + 1):
            shard = Shard(k, shards) if shards > 1 else None
            units.append(Unit(len(units), run, shard, shard.directory(out) if shard else out))
    return units


def select(units: list[Unit], part: Shard) -> list[Unit]:
    """The units sweep shard `part` (I/N) runs: a round-robin deal, so each gets every N-th unit."""
    return [u for u in units if u.index % part.count == part.index - 1]


class UnitBook:
    """The ``units/`` folder of a sweep: the plan and one record per unit."""

    def __init__(self, sweep_out: Path) -> None:
        self.folder = sweep_out / "units"

    def write_plan(self, units: list[Unit]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        _write_json(self.folder / "plan.json", {"units": [u.describe() for u in units]})

    def read_plan(self) -> list[dict[str, Any]]:
        try:
            return list(json.loads((self.folder / "plan.json").read_text())["units"])
        except FileNotFoundError:
            return []

    def record(self, name: str) -> dict[str, Any] | None:
        try:
            return dict(json.loads((self.folder / f"{name}.json").read_text()))
        except (FileNotFoundError, ValueError):  # a record being replaced reads as none for a moment
            return None

    def is_done(self, unit: Unit) -> bool:
        record = self.record(unit.name)
        return record is not None and record.get("state") == "done" and (unit.out / "summary.json").is_file()

    def mark(self, unit: Unit, state: str, **extra: Any) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        record = {**unit.describe(), "state": state, "host": socket.gethostname(), "pid": os.getpid(), "heartbeat": time.time(), **extra}
        job = os.environ.get("SLURM_JOB_ID")
        if job:
            record["slurm_job"] = job
        _write_json(self.folder / f"{unit.name}.json", record)


def _write_json(path: Path, value: Any) -> None:
    """Replace `path` whole (a reader on another machine never sees half a record)."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_text(json.dumps(value, indent=1))
    os.replace(temp, path)
