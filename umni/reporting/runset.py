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

from umni.reporting.tables import Cell
from umni.store.completion import is_complete, require_complete
from umni.store.runfolder import SUMMARY_JSON, CaseRecord, RunFolder, Summary, run_folders
from umni.util.errors import InputError

#: A score's bootstrap interval (low, high), or None where too few items were scored to give one.
Intervals = dict[str, tuple[float, float] | None]


@dataclass
class Run:
    """One run's summary, with its directory when known (for bootstrap intervals and seeds)."""

    summary: Summary
    path: Path | None = None
    label: str = ""
    #: Bootstrap intervals stored in the run's tables.json when it finished (None: none stored,
    #: compute them; an empty dict: show none rather than compute, as the viewer does).
    intervals: Intervals | None = None
    #: Why a score with a value has no interval (flattened key -> reason), stored beside them.
    no_interval: dict[str, str] = field(default_factory=dict)
    #: False where only stored figures may be shown (the viewer): nothing is re-scored from records
    #: (a paper's Average column over runs then has no interval).
    may_rescore: bool = True
    #: The run's bootstrap once computed (`intervals.bootstrap`), for figures over several runs.
    resampled: Any = None

    def __post_init__(self) -> None:
        if self.intervals is None and self.path is not None:
            stored = RunFolder(self.path).read_tables()
            if stored is not None:
                self.intervals, self.no_interval = stored.intervals, stored.no_interval

    @property
    def folder(self) -> RunFolder | None:
        return RunFolder(self.path) if self.path is not None else None

    def records(self) -> list[CaseRecord]:
        return list(self.each_record())

    def each_record(self) -> Iterator[CaseRecord]:
        """The run's records one at a time, as results.jsonl holds them (none without one)."""
        if self.folder is None or not self.folder.results_jsonl.exists():
            return iter(())
        return self.folder.each_record()

    def seed(self) -> int | None:
        """The run's seed from its run.json (None: no run.json, or one that cannot be read)."""
        if self.folder is None or not self.folder.run_json.exists():
            return None
        try:  # the one field, from any run.json (one an older umni wrote, too): a label needs no more
            seed = json.loads(self.folder.run_json.read_text()).get("seed")
        except (OSError, ValueError, AttributeError):
            return None
        return seed if isinstance(seed, int) else None


def run_label(bindings: dict[str, str], judged_again_by: str | None = None) -> str:
    """A short name for a run: its one spec, or role=spec pairs when roles differ; a re-judged run
    names its new judge."""
    values = list(bindings.values())
    base = max(sorted(set(values)), key=values.count) if values else "?"
    overrides = [f"{role}={spec}" for role, spec in sorted(bindings.items()) if spec != base]
    label = base + (" + " + ", ".join(overrides) if overrides else "")
    if judged_again_by:
        label += f" (rejudged by {judged_again_by})"
    return label


def summary_label(summary: Summary) -> str:
    """A run's name: the label it was given (summary.json's ``label``; a prefix before "/" groups
    it in `leaderboard --group`), else `run_label` of its bindings."""
    if summary.label and summary.label.strip():
        return summary.label.strip()
    return run_label(summary.bindings, summary.lineage.judges.new if summary.lineage is not None else None)


def label_runs(runs: list[Run]) -> list[Run]:
    """Give every run a label no other run of its protocol shares: bindings, then the options and
    seed that differ, then the run directory's name."""
    for run in runs:
        run.label = summary_label(run.summary)
    by_protocol: dict[str, list[Run]] = {}
    for run in runs:
        by_protocol.setdefault(run.summary.protocol, []).append(run)
    for members in by_protocol.values():
        labels = [r.label for r in members]
        clashing = [r for r in members if labels.count(r.label) > 1]
        if not clashing:
            continue
        options = [r.summary.options for r in clashing]
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
        folders = run_folders(path, SUMMARY_JSON)
        if not folders:
            raise InputError("no summary.json found (not a run directory, nor a folder of runs)", path=path)
        for folder in folders:
            if skipped is not None and not is_complete(folder):
                skipped.append(folder)
                continue
            require_complete(folder)  # a half-written run directory is never tabled
            found.append(Run(RunFolder(folder).read_summary(), folder))
    return found


def find_summaries(paths: Iterable[Path]) -> list[Summary]:
    """Summaries from run directories, or from folders holding run directories (a sweep)."""
    return [run.summary for run in find_runs(paths)]


# ------------------------------------------------------------------------------ stored tables


def read_stored_intervals(run_dir: Path) -> Intervals | None:
    """The intervals of the run's tables.json; None when it has none (or one of another version)."""
    stored = RunFolder(run_dir).read_tables()
    return None if stored is None else stored.intervals


# ----------------------------------------------------------------------------------- coverage
def run_coverage(summary: Summary) -> tuple[Cell, int]:
    """Nodes that produced a result out of all nodes, and the failed-node count (blocked apart).
    Nodes a ``--phase`` run left pending are not answered (and not failed either)."""
    failed = sum(v for k, v in summary.failures.items() if k != "blocked")
    blocked = summary.failures.get("blocked", 0)
    counts = summary.counts
    total = max(counts.nodes - counts.skipped, 0)
    return Cell(None, max(total - failed - blocked - (counts.pending or 0), 0), total, coverage_only=True), failed


def failure_share(summary: Summary) -> float:
    """Share of nodes (skipped ones aside) that failed or were blocked by a failure."""
    cell, _ = run_coverage(summary)
    return 0.0 if not cell.total else (cell.total - (cell.answered or 0)) / cell.total


def coverage_line(summary: Summary) -> str:
    """`answered/total nodes` for CLI summaries and reports, flagged when incomplete."""
    cell, failed = run_coverage(summary)
    pending = summary.counts.pending or 0
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


def as_number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return None if math.isnan(value) else float(value)


