"""Any other protocol: its scalar scores flattened into one table, one row per run (either layout)."""

from __future__ import annotations

from umni.reporting.intervals import flatten_scores
from umni.reporting.layouts.common import rows_table, score
from umni.reporting.runset import Run, as_number
from umni.reporting.tables import Cell, Table


def table(runs: list[Run], with_ci: bool) -> list[Table]:
    protocol = runs[0].summary.protocol
    columns: list[str] = []
    for run in runs:
        columns += [k for k, v in flatten_scores(run.summary.scores.root).items() if k not in columns and (as_number(v) is not None or v is None)]

    def cells(run: Run) -> list[Cell]:
        flat = flatten_scores(run.summary.scores.root)
        return [score(run, c, flat.get(c), with_ci=with_ci) for c in columns]

    title = runs[0].summary.title or protocol
    return [rows_table(str(title), protocol, runs, columns, cells, sort_on=columns.index("overall") if "overall" in columns else 0)]
