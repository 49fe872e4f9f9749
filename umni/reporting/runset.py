"""The runs a leaderboard compares: each run's summary and records as read from its directory, a
label no two rows share, coverage and failure figures, and the seeded bootstrap interval of a score
over cases (`intervals`; stored beside a finished run in tables.json, read back by the viewer)."""


from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from umni.protocols.caseio import each_result, read_json
from umni.reporting.tables import Cell
from umni.store.completion import is_complete, require_complete
from umni.util.errors import InputError

#: Where a finished run keeps its tables and intervals, and the layout version of that file. Version 2:
#: intervals drawn within the protocol's strata (version 1's had none on WISE's Overall and GIR-Bench's
#: group Overalls, and are recomputed rather than read), and ``no_interval``: why a score has none.
TABLES_FILE = "tables.json"
TABLES_VERSION = 2


@dataclass
class Run:
    """One run's summary, with its directory when known (for bootstrap intervals and seeds)."""

    summary: dict[str, Any]
    path: Path | None = None
    label: str = ""
    #: Bootstrap intervals stored in the run's tables.json when it finished (None: none stored,
    #: compute them; an empty dict: show none rather than compute, as the viewer does).
    intervals: dict[str, tuple[float, float] | None] | None = None
    #: Why a score with a value has no interval (flattened key -> reason), stored beside them.
    no_interval: dict[str, str] = field(default_factory=dict)
    #: False where only stored figures may be shown (the viewer): nothing is re-scored from records
    #: (a paper's Average column over runs then has no interval).
    may_rescore: bool = True
    #: The run's bootstrap once computed (`intervals.bootstrap`), for figures over several runs.
    resampled: Any = None

    def __post_init__(self) -> None:
        if self.intervals is None and self.path is not None:
            self.intervals = read_stored_intervals(self.path)
            if self.intervals is not None:
                self.no_interval = read_stored_reasons(self.path)

    def records(self) -> list[dict[str, Any]]:
        return list(self.each_record())

    def each_record(self) -> Iterator[dict[str, Any]]:
        """The run's records one at a time, as results.jsonl holds them (none without one)."""
        if self.path is None or not (self.path / "results.jsonl").exists():
            return iter(())
        return each_result(self.path / "results.jsonl")

    def seed(self) -> Any:
        manifest = self.path / "run.json" if self.path else None
        if manifest is not None and manifest.exists():
            try:
                return json.loads(manifest.read_text()).get("seed")
            except json.JSONDecodeError:
                return None
        return None


def run_label(summary: dict[str, Any]) -> str:
    """A short name for a run: the label it was given (summary.json's ``label``; a prefix before "/"
    groups it in `leaderboard --group`), else its one spec, or role=spec pairs when roles differ."""
    if isinstance(summary.get("label"), str) and summary["label"].strip():
        return str(summary["label"]).strip()
    bindings: dict[str, str] = summary.get("bindings", {})
    values = list(bindings.values())
    base = max(sorted(set(values)), key=values.count) if values else "?"
    overrides = [f"{role}={spec}" for role, spec in sorted(bindings.items()) if spec != base]
    label = base + (" + " + ", ".join(overrides) if overrides else "")
    lineage = summary.get("lineage", {}).get("judges")
    if lineage:
        label += f" (rejudged by {lineage['new']})"
    return label


def label_runs(runs: list[Run]) -> list[Run]:
    """Give every run a label no other run of its protocol shares: bindings, then the options and
    seed that differ, then the run directory's name."""
    for run in runs:
        run.label = run_label(run.summary)
    by_protocol: dict[str, list[Run]] = {}
    for run in runs:
        by_protocol.setdefault(run.summary.get("protocol", "?"), []).append(run)
    for members in by_protocol.values():
        labels = [r.label for r in members]
        clashing = [r for r in members if labels.count(r.label) > 1]
        if not clashing:
            continue
        options = [r.summary.get("options", {}) for r in clashing]
        keys = sorted({k for o in options for k in o})
        differing = [k for k in keys if len({json.dumps(o.get(k), sort_keys=True) for o in options}) > 1]
        seeds = [r.seed() for r in clashing]
        for run, opts, seed in zip(clashing, options, seeds):
            extra = [f"{k}={opts.get(k)}" for k in differing]
            if len(set(map(str, seeds))) > 1:
                extra.append(f"seed={seed}")
            if extra:
                run.label += " [" + ", ".join(extra) + "]"
        labels = [r.label for r in members]
        for run in members:
            if labels.count(run.label) > 1 and run.path is not None:
                run.label += f" @{run.path.name}"
    return runs


def find_runs(paths: Iterable[Path], *, skipped: list[Path] | None = None) -> list[Run]:
    """Runs from run directories, or from folders holding run directories (a sweep).

    A half-written run directory is refused; with a `skipped` list (the viewer's, which browses a
    folder while a sweep may still be writing into it) it is left out and appended there instead.
    """
    found: list[Run] = []
    for path in paths:
        path = Path(path)
        candidates = [path / "summary.json"] if (path / "summary.json").exists() else sorted(path.rglob("summary.json"))
        if not candidates:
            raise InputError("no summary.json found (not a run directory, nor a folder of runs)", path=path)
        for candidate in candidates:
            if skipped is not None and not is_complete(candidate.parent):
                skipped.append(candidate.parent)
                continue
            require_complete(candidate.parent)  # a half-written run directory is never tabled
            found.append(Run(read_json(candidate), candidate.parent))
    return found


def find_summaries(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """Summaries from run directories, or from folders holding run directories (a sweep)."""
    return [run.summary for run in find_runs(paths)]


# ------------------------------------------------------------------------------ stored tables


def read_stored_intervals(run_dir: Path) -> dict[str, tuple[float, float] | None] | None:
    """The intervals of the run's tables.json; None when it has none (or one of another version)."""
    data = _stored_tables(run_dir)
    if data is None or not isinstance(data.get("intervals"), dict):
        return None
    return {k: (tuple(v) if isinstance(v, list) and len(v) == 2 else None) for k, v in data["intervals"].items()}


def read_stored_reasons(run_dir: Path) -> dict[str, str]:
    """Why a score of the run's tables.json has no interval (key -> reason); empty when none stored."""
    data = _stored_tables(run_dir)
    reasons = data.get("no_interval") if data else None
    return {str(k): str(v) for k, v in reasons.items()} if isinstance(reasons, dict) else {}


def _stored_tables(run_dir: Path) -> dict[str, Any] | None:
    path = run_dir / TABLES_FILE
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) and data.get("version") == TABLES_VERSION else None


# ----------------------------------------------------------------------------------- coverage
def run_coverage(summary: dict[str, Any]) -> tuple[Cell, int]:
    """Nodes that produced a result out of all nodes, and the failed-node count (blocked apart).
    Nodes a ``--phase`` run left pending are not answered (and not failed either)."""
    failures = summary.get("failures", {})
    failed = sum(v for k, v in failures.items() if k != "blocked" and isinstance(v, int))
    blocked = failures.get("blocked", 0) or 0
    nodes = summary.get("counts", {}).get("nodes") or 0
    skipped = summary.get("counts", {}).get("skipped", 0) or 0
    pending = summary.get("counts", {}).get("pending", 0) or 0
    total = max(nodes - skipped, 0)
    return Cell(None, max(total - failed - blocked - pending, 0), total, coverage_only=True), failed


def failure_share(summary: dict[str, Any]) -> float:
    """Share of nodes (skipped ones aside) that failed or were blocked by a failure."""
    cell, _ = run_coverage(summary)
    return 0.0 if not cell.total else (cell.total - (cell.answered or 0)) / cell.total


def coverage_line(summary: dict[str, Any]) -> str:
    """`answered/total nodes` for CLI summaries and reports, flagged when incomplete."""
    cell, failed = run_coverage(summary)
    pending = summary.get("counts", {}).get("pending", 0) or 0
    left = f", {pending} pending (left for another --phase)" if pending else ""
    flag = " — INCOMPLETE: scores computed on partial coverage" if cell.incomplete else ""
    return f"coverage: {cell.answered}/{cell.total} nodes answered, {failed} failed{left}{flag}"


# ------------------------------------------------------------------------------------ helpers
def protocol_options(protocol: Any, dumped: dict[str, Any]) -> Any:
    """The run's options object back from summary.json (as recorded, even where a validator would
    reject the dump of its own defaults)."""
    try:
        return protocol.Options.model_validate(dumped)
    except Exception:
        return protocol.Options.model_construct(**dumped)


def as_number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return None if math.isnan(value) else float(value)


