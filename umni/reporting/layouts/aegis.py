"""AEGIS's tables. Paper layout: one row per model, the four tasks × (STEM, Humanity, Life) and
Overall, one decimal. Tidy layout: one row per run × task (the domain groups and the task's
Overall with its coverage)."""

from __future__ import annotations

from typing import Any

from umni.reporting.layouts.common import headline, rows_table, score
from umni.reporting.runset import Run, as_number, run_coverage
from umni.reporting.tables import Cell, Row, Table

#: The paper's main table: tasks as column groups (umni key, the paper's title), domain groups inside.
TASKS = [("understanding", "Understanding"), ("generation", "Generation"), ("editing", "Editing"), ("interleaved", "Interleaved Generation")]
#: umni's domain-group keys and the paper's names for them.
GROUPS = ["STEM", "Humanities", "Daily life"]
PAPER_GROUPS = ["STEM", "Humanity", "Life"]


def _coverage(row: dict[str, Any]) -> tuple[int | None, int | None]:
    scored = row.get("scored")
    if scored is None:
        return None, None
    return scored, scored + (row.get("inference_failures") or 0) + (row.get("evaluation_failures") or 0)


def paper(runs: list[Run], with_ci: bool) -> list[Table]:
    def cells(run: Run) -> list[Cell]:
        main = run.summary.scores.get("main_table", {})
        out = [score(run, f"main_table/{task}/{g}", main.get(task, {}).get(g), with_ci=with_ci, decimals=1) for task, _ in TASKS for g in GROUPS]
        return out + [headline(run, with_ci, *_coverage(main.get("overall", {})), decimals=1)]

    columns = [name for _ in TASKS for name in PAPER_GROUPS] + ["Overall"]
    table = rows_table("AEGIS · main table (paper layout)", "aegis", runs, columns, cells, sort_on=len(columns) - 1,
                       note="one row per model: each task by domain group, then Overall")
    table.groups = [[title, len(GROUPS)] for _, title in TASKS]
    return [table]


def tidy(runs: list[Run], with_ci: bool) -> list[Table]:
    table = Table("AEGIS · task × domain group", "aegis", ["run", "task"], [*GROUPS, "Overall"], note="runs sorted by Overall")
    ordered = sorted(runs, key=lambda r: -(as_number(r.summary.scores.get("overall")) or -1e9))
    for run in ordered:
        coverage, failed = run_coverage(run.summary)
        main = run.summary.scores.get("main_table", {})
        for task in [t for t, _ in TASKS] + ["overall"]:
            row = main.get(task)
            if row is None:
                continue
            overall = score(run, f"main_table/{task}/overall", row.get("overall"), *_coverage(row), with_ci=with_ci)
            groups = [score(run, f"main_table/{task}/{g}", row.get(g), with_ci=with_ci) for g in GROUPS]
            table.rows.append(Row(run.label, [run.label, task], groups + [overall], coverage, failed))
    return [table]
