"""GIR-Bench's tables, three decimals. Paper layout: the paper's Table 1 (GIR-Bench-Uni: image
understanding and image generation, each by Zoology, Botany and Geography with an Overall), its
Table 2 (GIR-Bench-T2I and GIR-Bench-Edit, three tasks and an Overall each, sudoku as Visual
Logic), then the task table. Tidy layout: the task table alone."""

from __future__ import annotations

from umni.reporting.layouts.common import headline, rows_table, score
from umni.reporting.runset import Run, as_number
from umni.reporting.tables import Cell, Table

#: The paper's Table 2: GIR-Bench-T2I and GIR-Bench-Edit, three tasks and an Overall each.
PAPER_GROUPS = [("GIR-Bench-T2I", ["numerical", "spatial", "text"]), ("GIR-Bench-Edit", ["puzzle", "sudoku", "perception"])]
#: The summary's key of each group of Table 2 (its Overall under ``<key>/overall``).
GROUP_KEYS = ("t2i", "edit")
PAPER_NAMES = {"numerical": "Numerical Reasoning", "spatial": "Spatial Layout", "text": "Text Rendering", "puzzle": "Visual Puzzle",
               "sudoku": "Visual Logic", "perception": "Reasoning Perception", "overall": "Overall"}
#: The paper's Table 1: each side of GIR-Bench-Uni by the entities' domain, then its Overall.
UNI_SIDES = [("Image Understanding", "understanding"), ("Image Generation", "generation")]
UNI_DOMAINS = ["Zoology", "Botany", "Geography"]
#: GIR-Bench metric keys as the paper's table groups them (Uni, T2I, Edit).
TASKS = {
    "uni_understanding": "Uni understanding", "uni_generation": "Uni generation",
    "numerical": "T2I numerical", "spatial": "T2I spatial", "text": "T2I text",
    "puzzle": "Edit puzzle", "sudoku": "Edit sudoku", "perception": "Edit perception",
}


def _task(run: Run, key: str, with_ci: bool) -> Cell:
    ms = run.summary.scores.get("metrics", {})
    if key not in ms:
        return Cell(None, decimals=3)
    m = ms[key]
    return score(run, f"metrics/{key}/score", m.get("score"), m.get("scored"), m.get("cases"), with_ci=with_ci, decimals=3)


def tasks_table(runs: list[Run], with_ci: bool) -> Table:
    metrics: list[str] = []
    for run in runs:
        metrics += [m for m in run.summary.scores.get("metrics", {}) if m not in metrics]

    def cells(run: Run) -> list[Cell]:
        s = run.summary.scores.root
        ms = s.get("metrics", {})
        part = [ms[m] for m in s.get("overall_of", []) if m in ms]
        answered = sum(p.get("scored") or 0 for p in part) if part else None
        total = sum(p.get("cases") or 0 for p in part) if part else None
        return [_task(run, m, with_ci) for m in metrics] + [headline(run, with_ci, answered, total, decimals=3)]

    return rows_table("GIR-Bench · tasks", "girbench", runs, [*(TASKS.get(m, m) for m in metrics), "Overall"], cells, sort_on=len(metrics),
                      note="Overall averages the tasks that were run (scores.overall_of)")


def uni_table(runs: list[Run], with_ci: bool) -> Table | None:
    """Table 1, for runs that ran a Uni task (none otherwise); a side a run did not run reads "—"
    as the paper's dash."""
    if not any(run.summary.scores.get("uni") for run in runs):
        return None

    def cells(run: Run) -> list[Cell]:
        uni = run.summary.scores.get("uni") or {}
        out: list[Cell] = []
        for _, side in UNI_SIDES:
            values = uni.get(side) or {}
            out += [score(run, f"uni/{side}/{domain}", values.get(domain), with_ci=with_ci, decimals=3) for domain in UNI_DOMAINS]
            out.append(score(run, f"uni/{side}/overall", values.get("overall"), with_ci=with_ci, decimals=3))
        return out

    columns = [*UNI_DOMAINS, "Overall"] * len(UNI_SIDES)
    table = rows_table("GIR-Bench · Uni (paper Table 1)", "girbench", runs, columns, cells, sort_on=7,
                       note="each side's Overall is the mean of its domain scores")
    table.groups = [[name, len(UNI_DOMAINS) + 1] for name, _ in UNI_SIDES]
    return table


def paper(runs: list[Run], with_ci: bool) -> list[Table]:
    def cells(run: Run) -> list[Cell]:
        out: list[Cell] = []
        for (_, keys), group in zip(PAPER_GROUPS, GROUP_KEYS):
            part = [_task(run, k, with_ci) for k in keys]
            values = [as_number(c.value) for c in part]
            answered, total = sum(c.answered or 0 for c in part), sum(c.total or 0 for c in part)
            stored = run.summary.scores.get(group)
            if isinstance(stored, dict) and "overall" in stored:  # the summary's group Overall, with its interval
                overall = score(run, f"{group}/overall", stored["overall"], answered, total, with_ci=with_ci, decimals=3)
            elif all(v is not None for v in values):  # a summary written before the groups were scored
                overall = Cell(sum(v for v in values if v is not None) / len(values), answered, total, decimals=3)
            else:
                overall = Cell(None, decimals=3)
            if overall.value is None and any(v is not None for v in values):
                overall.reason = "needs all three tasks of the group"
            out += part + [overall]
        return out

    columns = [PAPER_NAMES[k] for _, keys in PAPER_GROUPS for k in [*keys, "overall"]]
    t2i_edit = rows_table("GIR-Bench · T2I and Edit (paper Table 2)", "girbench", runs, columns, cells, sort_on=7,
                          note="each group's Overall is the mean of its three tasks, as in the paper's table")
    t2i_edit.groups = [[name, len(keys) + 1] for name, keys in PAPER_GROUPS]
    uni = uni_table(runs, with_ci)
    return [*([uni] if uni is not None else []), t2i_edit, tasks_table(runs, with_ci)]


def tidy(runs: list[Run], with_ci: bool) -> list[Table]:
    return [tasks_table(runs, with_ci)]
