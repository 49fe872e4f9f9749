"""What every protocol's layout builds its tables with: a score cell with its coverage and (where
enough items stand behind it) its bootstrap interval, a one-row-per-run table sorted by its
headline, and a table with the runs as columns (as UmniBench's paper prints them)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from umni.reporting.intervals import mean_interval, run_intervals
from umni.reporting.runset import Run, as_number, run_coverage
from umni.reporting.tables import Cell, Row, Table

#: A protocol's layout: its tables for the runs, with or without bootstrap intervals.
Layout = Callable[[list[Run], bool], list[Table]]


def interval(run: Run, key: str, with_ci: bool) -> tuple[float, float] | None:
    """The run's interval for the score at `key` (flattened scores key); none where too few cases
    bear on it (see `intervals.MIN_INTERVAL_CASES`)."""
    return run_intervals(run).get(key) if with_ci else None


def score(run: Run, key: str, value: Any, answered: int | None = None, total: int | None = None, *, with_ci: bool,
          decimals: int = 2) -> Cell:
    """One score cell: its value, coverage and interval (or why it has none)."""
    ci = interval(run, key, with_ci) if as_number(value) is not None else None
    why = run.no_interval.get(key) if with_ci and ci is None and as_number(value) is not None else None
    return Cell(value, answered, total, ci, decimals=decimals, no_interval=why)


def headline(run: Run, with_ci: bool, answered: int | None, total: int | None, decimals: int = 2) -> Cell:
    return score(run, "overall", run.summary.scores.get("overall"), answered, total, with_ci=with_ci, decimals=decimals)


def by_headline(runs: Sequence[Run]) -> list[Run]:
    """Runs best first by their overall score (runs without one last)."""
    def key(run: Run) -> tuple[int, float]:
        value = as_number(run.summary.scores.get("overall"))
        return (1, 0.0) if value is None else (0, -value)

    return sorted(runs, key=key)


def rows_table(title: str, protocol: str, runs: list[Run], columns: list[str], cells: Callable[[Run], list[Cell]], *,
               sort_on: int = 0, note: str = "") -> Table:
    """One row per run, sorted by the `sort_on` column (best first)."""
    table = Table(title, protocol, ["run"], columns, note=note)
    for run in runs:
        coverage, failed = run_coverage(run.summary)
        table.rows.append(Row(run.label, [run.label], cells(run), coverage, failed))

    def key(row: Row) -> tuple[int, float]:
        value = as_number(row.cells[sort_on].value) if row.cells else None
        return (1, 0.0) if value is None else (0, -value)

    table.rows.sort(key=key)
    return table


#: One metric row of a runs-as-columns table: its keys, how each run's cell is made, and the
#: flattened score key its Average over the runs is resampled from (None: no interval).
MetricRow = tuple[list[str], Callable[[Run], Cell]] | tuple[list[str], Callable[[Run], Cell], str | None]


def columns_table(title: str, protocol: str, runs: list[Run], key_columns: list[str], rows: list[MetricRow], *,
                  average: bool = False, note: str = "", with_ci: bool = False) -> Table:
    """The runs as columns (best headline first), one row per metric, then each run's coverage and
    failed nodes as rows. With `average`, a last column holds each row's mean over the runs, with
    an interval where the row names its score key (`intervals.mean_interval`)."""
    ordered = by_headline(runs)
    table = Table(title, protocol, key_columns, [r.label for r in ordered] + (["Average"] if average else []), note=note, run_columns=True)
    pad = [""] * (len(key_columns) - 1)
    for keys, make, *key in rows:
        cells = [make(run) for run in ordered]
        if average:
            mean = mean_cell(cells)
            if with_ci and key and key[0] and mean.value is not None:
                mean.ci = mean_interval(ordered, key[0])
                if mean.ci is None:
                    mean.no_interval = ("a mean over runs is resampled only for runs of the same cases, each with an interval of its own "
                                        "and its records at hand")
            cells.append(mean)
        table.rows.append(Row("", keys, cells, None, None))
    footer = [run_coverage(run.summary) for run in ordered]
    extra = [Cell(None, applies=False)] if average else []
    table.rows.append(Row("", ["coverage", *pad], [c for c, _ in footer] + extra, None, None))
    table.rows.append(Row("", ["failures", *pad], [Cell(n, decimals=0) for _, n in footer] + extra, None, None))
    return table


def mean_cell(cells: list[Cell]) -> Cell:
    """The mean of the runs' values in one row (a paper's Average column); none when a run has none."""
    values = [as_number(c.value) for c in cells]
    decimals = cells[0].decimals if cells else 2
    if not values or any(v is None for v in values):
        return Cell(None, decimals=decimals, reason="a run has no score here" if values else None)
    return Cell(round(sum(v for v in values if v is not None) / len(values), 4), decimals=decimals)
