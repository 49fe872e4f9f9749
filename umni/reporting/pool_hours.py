"""What each Ray pool of a sweep held: loads, seconds, CPU-hours and GPU-hours, summed from the
``pool.release`` events the sweep's scheduler (`umni.run.turns`) writes into ``<sweep>/events.jsonl``.

Every invocation (a resumed sweep, each sweep shard) appends to the same log, so the totals are what
the sweep held in all, which is what a lab's accounting wants.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TypedDict

from umni.store.runfolder import EVENTS_JSONL


class PoolHours(TypedDict):
    """What one Ray pool of a sweep held over every invocation (a row of sweep.json's ``pools``)."""

    spec: str
    loads: int
    seconds: float
    cpu_hours: float
    gpu_hours: float


def pools_held(sweep_out: Path) -> list[PoolHours]:
    """One row per pool spec, in order of first release: loads, seconds, cpu_hours, gpu_hours."""
    rows: dict[str, PoolHours] = {}
    try:
        lines = (sweep_out / EVENTS_JSONL).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:  # a line a killed process left half-written
            continue
        if event.get("event") != "pool.release":
            continue
        row = rows.setdefault(event["spec"], {"spec": event["spec"], "loads": 0, "seconds": 0.0, "cpu_hours": 0.0, "gpu_hours": 0.0})
        row["loads"] += 1
        row["seconds"] += float(event.get("seconds", 0.0))
        row["cpu_hours"] += float(event.get("cpu_hours", 0.0))
        row["gpu_hours"] += float(event.get("gpu_hours", 0.0))
    return list(rows.values())
