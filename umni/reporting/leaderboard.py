"""Leaderboards: many runs side by side, each protocol in its paper's table layout (or tidy).

Every score cell carries its coverage (answered / total) and is marked ``*`` when computed on
incomplete coverage, so a high score on a run where most nodes failed reads as such; every run
also shows its node coverage and failure count. Every score computed on enough items of a run
whose ``results.jsonl`` is at hand gets a seeded percentile-bootstrap 95 % interval over cases
(`intervals`). Runs are sorted by their headline score, and labelled so that no two read the same.

The layouts live in `umni.reporting.layouts`: ``paper`` reproduces each paper's main tables
(UmniBench's question and domain tables with the runs as columns, GENIUS's dimensions × RC/VC/AQ,
AEGIS's tasks × domain groups, WISE's categories, GIR-Bench's T2I and Edit); ``tidy`` is one row
per run, the shape of the long CSV.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from umni.reporting.intervals import bootstrap, bootstrap_headline, bootstrap_intervals  # noqa: F401 - bootstrap_headline, bootstrap_intervals: importable from here too
from umni.reporting.layouts import LAYOUT_NAMES, layout_for
from umni.reporting.layouts import generic as _generic
from umni.reporting.methods import how_made
from umni.reporting.runset import (  # noqa: F401 - coverage_line, failure_share, find_runs, find_summaries, run_label: importable from here too
    Run,
    coverage_line,
    failure_share,
    find_runs,
    find_summaries,
    label_runs,
    read_stored_intervals,
    run_coverage,
    run_label,
    summary_label,
)
from umni.reporting.tables import LONG_HEADER, Table, csv_text, tables_csv
from umni.store.runfiles import LEADERBOARD_MD
from umni.store.runfolder import RunFolder, RunTables, Summary


def write_run_tables(run_dir: Path, summary: Summary) -> Path:
    """Compute the run's leaderboard tables once, bootstrap intervals included, and store them as
    tables.json beside it: the viewer and later leaderboards read the intervals instead of
    re-scoring every case hundreds of times."""
    run = Run(summary, run_dir, intervals=None)
    run.intervals = None  # this run's own tables.json is what is being written: compute afresh
    done = bootstrap(run)
    run.intervals, run.no_interval = done.intervals, done.reasons
    folder = RunFolder(run_dir)
    tables = [t.to_json() for t in build_tables([run])]
    folder.write_tables(RunTables(intervals=done.intervals, no_interval=done.reasons, tables=tables, provenance=summary.provenance))
    return folder.tables_json


def build_tables(runs: list[Run] | list[Summary], *, with_ci: bool = True, layout: str = "paper") -> list[Table]:
    """The tables of every protocol among `runs` (Run objects or bare summaries) in `layout`:
    ``paper`` (each paper's own tables) or ``tidy`` (one row per run)."""
    if layout not in LAYOUT_NAMES:
        raise ValueError(f"unknown layout {layout!r}; known: {', '.join(LAYOUT_NAMES)}")
    items = [r if isinstance(r, Run) else Run(r, Path(r.run_dir) if r.run_dir else None) for r in runs]
    label_runs(items)
    by_protocol: dict[str, list[Run]] = {}
    for run in items:
        by_protocol.setdefault(run.summary.protocol, []).append(run)
    tables: list[Table] = []
    for protocol in sorted(by_protocol):
        members = by_protocol[protocol]
        try:
            made = layout_for(protocol, layout)(members, with_ci)
        except (KeyError, TypeError, AttributeError):  # a summary of another shape: still shown, flattened
            made = _generic.table(members, with_ci)
        deviation = _deviation_note(members)
        if deviation and made:
            made[0].note = (made[0].note + "; " if made[0].note else "") + deviation
        if made:  # under the protocol's first table, as its deviations
            made[0].how_made = [how_made(run.label, run.summary.provenance) for run in members]
        tables += made
    return tables


def _deviation_note(runs: list[Run]) -> str:
    """Where umni deliberately differs from the official code (scores.deviations or deviations),
    named in the table's note so no reader takes the figure for the official one unawares."""
    seen: dict[str, bool] = {}
    for run in runs:
        listed = (run.summary.model_extra or {}).get("deviations") or run.summary.scores.get("deviations") or []
        for item in listed if isinstance(listed, list) else []:
            if isinstance(item, dict) and item.get("id"):
                seen[str(item["id"])] = seen.get(str(item["id"]), False) or bool(item.get("changes_score"))
            elif isinstance(item, str):
                seen.setdefault(item, False)
    if not seen:
        return ""
    names = ", ".join(f"{k}{' (changes the score)' if v else ''}" for k, v in seen.items())
    return f"deviations from the official code: {names} — details and official-equivalent figures in summary.json"


def write_leaderboard(tables: list[Table], out: Path, *, tidy: list[Table] | None = None, plain: bool = False) -> dict[str, Path]:
    """Write `tables` as Markdown (`plain`: figures alone, details in footnotes), LaTeX and JSON;
    the tidy long-format CSV (one row per run × metric, from the `tidy` layout's tables when given:
    a paper table with the runs as columns reads the same either way); and the tables as laid out,
    all in tables.csv (a `table` column when there are several) and one CSV each under tables/.
    Return their paths."""
    from umni.store.atomic import atomic_write_text

    out.mkdir(parents=True, exist_ok=True)
    md = out / LEADERBOARD_MD
    atomic_write_text(md, "\n\n".join(t.markdown(plain=plain) for t in tables) + "\n")
    atomic_write_text(out / "leaderboard.tex", "\n\n".join(t.latex(plain=plain) for t in tables) + "\n")
    atomic_write_text(out / "leaderboard.csv", long_csv(tables if tidy is None else tidy))
    atomic_write_text(out / "leaderboard.json", json.dumps([t.to_json() for t in tables], indent=2, ensure_ascii=False))
    atomic_write_text(out / "tables.csv", tables_csv(tables))
    folder = out / "tables"
    folder.mkdir(exist_ok=True)
    names = table_file_names(tables)
    for table, name in zip(tables, names):
        atomic_write_text(folder / name, table.csv())
    return {"markdown": md, "latex": out / "leaderboard.tex", "csv": out / "leaderboard.csv", "json": out / "leaderboard.json",
            "tables": out / "tables.csv", **{f"table {i + 1}": folder / name for i, name in enumerate(names)}}


def table_file_names(tables: list[Table]) -> list[str]:
    """A file name per table from its title (lower case, words joined by "-"), numbered where two match."""
    names: list[str] = []
    for table in tables:
        stem = "-".join(re.findall(r"[a-z0-9]+", table.title.lower()))[:80] or "table"
        name, n = f"{stem}.csv", 1
        while name in names:
            n += 1
            name = f"{stem}-{n}.csv"
        names.append(name)
    return names


def long_csv(tables: list[Table]) -> str:
    """The tidy long CSV: a header, then one row per run × metric of every table."""
    return csv_text(LONG_HEADER, (row for table in tables for row in table.long_rows()))
