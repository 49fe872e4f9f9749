"""What a shared result store holds, for `umni status STORE`: results per kind, the processes that
wrote them, and the blobs beside them.

A store knows no runs or sweeps; what it does know is each result's provenance (host, process id,
Slurm job). Grouping by that gives the writers of a distributed evaluation — every shard, array task
or assembling run that stored results — with how many each stored and when it last wrote, which is
how a lab sees from the store alone which machines are still working.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from umni.store.urls import describe, open_blobs, open_results, sqlite_layout
from umni.util.errors import InputError


@dataclass
class Writer:
    """One process that stored results: its host, process id and Slurm job (when known)."""

    host: str
    pid: int | None
    slurm_job: str | None
    results: int = 0
    first: float = 0.0
    last: float = 0.0

    def name(self) -> str:
        return self.host + (f" pid {self.pid}" if self.pid is not None else "") + (f" (Slurm job {self.slurm_job})" if self.slurm_job else "")


@dataclass
class Census:
    location: str
    kinds: dict[str, int] = field(default_factory=dict)
    writers: list[Writer] = field(default_factory=list)
    blobs: str | None = None
    blob_count: int | None = None

    @property
    def results(self) -> int:
        return sum(self.kinds.values())


def is_store(location: str | Path) -> bool:
    """Whether `location` names a result store rather than a run or sweep folder."""
    text = str(location)
    if "://" in text:
        return True
    path = Path(text)
    return (path.is_file() and path.suffix in (".db", ".sqlite", ".sqlite3")) or (path / "cache.db").is_file()


def take_census(location: str | Path, blobs: str | None = None) -> Census:
    """Read the store at `location` (nothing written); `blobs`: the blob store to count, else the
    one a SQLite store implies (a PostgreSQL store's blobs are counted only when given)."""
    text = str(location)
    if "://" not in text and not sqlite_layout(text)[0].is_file():
        raise InputError("no result store here (a cache directory with cache.db, a .db file, or postgresql://)", path=text)
    results, implied = open_results(text)
    try:
        census = Census(describe(text))
        writers: dict[tuple[str, int | None, str | None], Writer] = {}
        for kind, provenance, count, first, last in results.tally():
            census.kinds[kind] = census.kinds.get(kind, 0) + count
            info = _provenance(provenance)
            pid = info.get("pid")
            who = (str(info.get("host", "unknown host")), pid if isinstance(pid, int) else None, info.get("slurm_job"))
            writer = writers.setdefault(who, Writer(*who, first=first, last=last))
            writer.results += count
            writer.first, writer.last = min(writer.first, first), max(writer.last, last)
    finally:
        results.close_now()
    census.writers = sorted(writers.values(), key=lambda w: (-w.last, w.host, w.pid or 0))
    census.kinds = dict(sorted(census.kinds.items()))
    where = blobs if blobs is not None else implied
    if where is not None and ("://" in str(where) or Path(where).is_dir()):
        census.blobs = describe(where)
        census.blob_count = open_blobs(where).count()
    return census


def _provenance(text: str | None) -> dict[str, Any]:
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
