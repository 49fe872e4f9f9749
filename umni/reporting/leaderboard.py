"""Leaderboards: many runs side by side, each protocol in its paper's table layout.

Every score cell carries its coverage (answered / total) and is marked ``*`` when computed on
incomplete coverage, so a high score on a run where most nodes failed reads as such; each row
also shows the run's node coverage and failure count. The headline score of a run whose
``results.jsonl`` is at hand gets a seeded percentile-bootstrap 95 % interval over cases. Runs
are sorted by their headline score, and labelled so that no two rows read the same.

Layouts: GENIUS (Overall, RC/VC/AQ and one column per dimension), AEGIS (task × domain-group main
table), WISE (category table), GIR-Bench (task table), UmniBench (stages, questions, domains);
any other protocol gets its scalar scores flattened into one table.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from umni.reporting.runset import (  # noqa: F401 - coverage_line, failure_share, find_runs, find_summaries, run_label: importable from here too
    TABLES_FILE,
    TABLES_VERSION,
    Run,
    as_number,
    bootstrap_headline,
    coverage_line,
    failure_share,
    find_runs,
    find_summaries,
    label_runs,
    read_stored_intervals,
    run_coverage,
    run_label,
)
from umni.reporting.tables import LONG_HEADER, Cell, Row, Table

Layout = Callable[[list[Run], bool], list[Table]]


def write_run_tables(run_dir: Path, summary: dict[str, Any]) -> Path:
    """Compute the run's leaderboard tables once, bootstrap intervals included, and store them as
    tables.json beside it: the viewer and later leaderboards read the intervals instead of
    re-scoring every case hundreds of times."""
    from umni.store.artifacts import atomic_write_text

    run = Run(summary, run_dir, intervals=None)
    run.intervals = None  # this run's own tables.json is what is being written: compute afresh
    intervals = {"overall": bootstrap_headline(run)} if as_number(summary.get("scores", {}).get("overall")) is not None else {}
    run.intervals = intervals
    tables = [t.to_json() for t in build_tables([run])]
    path = run_dir / TABLES_FILE
    atomic_write_text(path, json.dumps({"version": TABLES_VERSION, "intervals": intervals, "tables": tables}, indent=1, ensure_ascii=False))
    return path


def _sort_key(table: Table, column: int) -> Callable[[Row], tuple[int, float]]:
    def key(row: Row) -> tuple[int, float]:
        value = as_number(row.cells[column].value) if row.cells else None
        return (1, 0.0) if value is None else (0, -value)

    return key


def _rows_table(title: str, protocol: str, runs: list[Run], columns: list[str], cells: Callable[[Run], list[Cell]], *, sort_on: int = 0, note: str = "") -> Table:
    table = Table(title, protocol, ["run"], columns, note=note)
    for run in runs:
        coverage, failed = run_coverage(run.summary)
        table.rows.append(Row(run.label, [run.label], cells(run), coverage, failed))
    table.rows.sort(key=_sort_key(table, sort_on))
    return table


def _headline(run: Run, with_ci: bool, answered: int | None, total: int | None) -> Cell:
    value = run.summary.get("scores", {}).get("overall")
    return Cell(value, answered, total, bootstrap_headline(run) if with_ci and value is not None else None)


def _umnibench(runs: list[Run], with_ci: bool) -> list[Table]:
    stages = {"generation": ["Q1", "Q2", "Q3"], "interaction": ["Q4", "Q5", "Q6"], "counterfactual": ["Q7", "Q8", "Q9"]}

    def counts(s: dict[str, Any], qs: Iterable[str]) -> tuple[int, int]:
        answered = sum(s.get("answered", {}).get(q, 0) for q in qs)
        return answered, answered + sum(s.get("failed", {}).get(q, 0) for q in qs)

    def main(run: Run) -> list[Cell]:
        s = run.summary["scores"]
        every = [q for qs in stages.values() for q in qs]
        return [_headline(run, with_ci, *counts(s, every))] + [Cell(s.get("stages", {}).get(st), *counts(s, qs)) for st, qs in stages.items()]

    questions = sorted({q for r in runs for q in r.summary["scores"].get("questions", {})}, key=lambda q: int(q[1:]) if q[1:].isdigit() else 99)
    domains = sorted({d for r in runs for d in r.summary["scores"].get("domains", {})})
    return [
        _rows_table("UmniBench · overall and stages", "umnibench", runs, ["Overall", "Generation", "Interaction", "Counterfactual"], main,
                    note="Overall with its 95 % bootstrap interval over cases"),
        _rows_table("UmniBench · questions", "umnibench", runs, questions,
                    lambda r: [Cell(r.summary["scores"]["questions"].get(q), *counts(r.summary["scores"], [q])) for q in questions]),
        _rows_table("UmniBench · domains", "umnibench", runs, domains,
                    lambda r: [Cell(r.summary["scores"].get("domains", {}).get(d)) for d in domains]),
    ]


def _genius(runs: list[Run], with_ci: bool) -> list[Table]:
    dims = sorted({d for r in runs for d in r.summary["scores"].get("dimensions", {})})

    def cells(run: Run) -> list[Cell]:
        s = run.summary["scores"]
        cases = s.get("cases")
        scored = s.get("scored", {})
        weights = s.get("weights", {"rc": 0.6, "vc": 0.35, "aq": 0.05})
        out = [_headline(run, with_ci, min(scored.values()) if scored else None, cases)]
        out += [Cell(s.get(m), scored.get(m), cases) for m in ("rc", "vc", "aq")]
        for dim in dims:
            d = s.get("dimensions", {}).get(dim)
            if not d:
                out.append(Cell(None))
                continue
            parts = [as_number(d.get(m)) for m in ("rc", "vc", "aq")]
            value = round(sum(weights[m] * p for m, p in zip(("rc", "vc", "aq"), parts)), 2) if None not in parts else None
            items = d.get("items")
            out.append(Cell(value, items - d.get("missing_outputs", 0) if items is not None else None, items))
        return out

    return [_rows_table("GENIUS · dimensions", "genius", runs, ["Overall", "RC", "VC", "AQ", *dims], cells,
                        note="dimension columns: RC/VC/AQ combined with the run's weights (as Overall)")]


def _aegis(runs: list[Run], with_ci: bool) -> list[Table]:
    groups = ["STEM", "Humanities", "Daily life"]
    tasks = ["understanding", "generation", "editing", "interleaved", "overall"]
    table = Table("AEGIS · task × domain group", "aegis", ["run", "task"], [*groups, "Overall"],
                  note="runs sorted by Overall; Overall (overall row) with its 95 % bootstrap interval")
    ordered = sorted(runs, key=lambda r: -(as_number(r.summary["scores"].get("overall")) or -1e9))
    for run in ordered:
        coverage, failed = run_coverage(run.summary)
        main = run.summary["scores"].get("main_table", {})
        for task in tasks:
            row = main.get(task)
            if row is None:
                continue
            scored = row.get("scored")
            total = (scored or 0) + (row.get("inference_failures") or 0) + (row.get("evaluation_failures") or 0)
            overall = Cell(row.get("overall"), scored, total)
            if task == "overall" and with_ci and row.get("overall") is not None:
                overall.ci = bootstrap_headline(run)
            table.rows.append(Row(run.label, [run.label, task], [Cell(row.get(g)) for g in groups] + [overall], coverage, failed))

    def paper(run: Run) -> list[Cell]:
        main = run.summary["scores"].get("main_table", {})
        out = [Cell(main.get(task, {}).get(g), decimals=1) for task, _ in AEGIS_PAPER_TASKS for g in groups]
        whole = main.get("overall", {})
        scored = whole.get("scored")
        total = (scored or 0) + (whole.get("inference_failures") or 0) + (whole.get("evaluation_failures") or 0) if scored is not None else None
        headline = _headline(run, with_ci, scored, total)
        headline.decimals = 1
        return out + [headline]

    columns = [name for _ in AEGIS_PAPER_TASKS for name in AEGIS_PAPER_GROUPS] + ["Overall"]
    main_table = _rows_table("AEGIS · main table (paper layout)", "aegis", runs, columns, paper, sort_on=len(columns) - 1,
                             note="one row per model: each task by domain group, then Overall with its 95 % bootstrap interval")
    main_table.groups = [[title, len(groups)] for _, title in AEGIS_PAPER_TASKS]
    return [main_table, table]


#: The paper's main table: tasks as column groups (umni key, the paper's title), domain groups inside.
AEGIS_PAPER_TASKS = [("understanding", "Understanding"), ("generation", "Generation"), ("editing", "Editing"),
                     ("interleaved", "Interleaved Generation")]
AEGIS_PAPER_GROUPS = ["STEM", "Humanity", "Life"]


def _wise(runs: list[Run], with_ci: bool) -> list[Table]:
    cats = ["culture", "time", "space", "biology", "physics", "chemistry"]

    def cells(run: Run) -> list[Cell]:
        s = run.summary["scores"]
        scored, failed = s.get("scored_by_category", {}), s.get("failed_by_category", {})
        out = [Cell(s.get(c), scored.get(c), (scored.get(c) or 0) + (failed.get(c) or 0)) if c in scored else Cell(s.get(c)) for c in cats]
        expected = s.get("expected") or ((s.get("scored") or 0) + (s.get("failed") or 0))
        headline = _headline(run, with_ci, s.get("scored"), expected)
        unscored = [c for c in cats if s.get(c) is None]
        if headline.value is None and unscored:
            headline.reason = f"no score for {', '.join(unscored)}: Overall weights all six categories"
        return out + [headline]

    metric = {r.summary["scores"].get("metric", "score") for r in runs}
    names = [WISE_COLUMNS.get(c, c.capitalize()) for c in cats]
    return [_rows_table(f"WISE · categories ({'/'.join(sorted(metric))})", "wise", runs, names + ["Overall"], cells,
                        sort_on=len(cats))]


#: WISE category keys under the names of the paper's Table 1.
WISE_COLUMNS = {"culture": "Cultural"}


def _girbench(runs: list[Run], with_ci: bool) -> list[Table]:
    metrics: list[str] = []
    for run in runs:
        metrics += [m for m in run.summary["scores"].get("metrics", {}) if m not in metrics]

    def cells(run: Run) -> list[Cell]:
        s = run.summary["scores"]
        ms = s.get("metrics", {})
        out = [Cell(ms[m].get("score"), ms[m].get("scored"), ms[m].get("cases")) if m in ms else Cell(None) for m in metrics]
        part = [ms[m] for m in s.get("overall_of", []) if m in ms]
        answered = sum(p.get("scored") or 0 for p in part) if part else None
        total = sum(p.get("cases") or 0 for p in part) if part else None
        return out + [_headline(run, with_ci, answered, total)]

    names = [GIR_TASKS.get(m, m) for m in metrics]
    tasks = _rows_table("GIR-Bench · tasks", "girbench", runs, [*names, "Overall"], cells, sort_on=len(metrics),
                        note="Overall averages the tasks that were run (scores.overall_of)")
    for row in tasks.rows:
        for cell in row.cells:
            cell.decimals = 3

    def paper(run: Run) -> list[Cell]:
        ms = run.summary["scores"].get("metrics", {})
        out: list[Cell] = []
        for _, keys in GIR_PAPER_GROUPS:
            part = [Cell(ms[k].get("score"), ms[k].get("scored"), ms[k].get("cases"), decimals=3) if k in ms else Cell(None, decimals=3) for k in keys]
            values = [as_number(c.value) for c in part]
            overall = Cell(None, decimals=3)
            if all(v is not None for v in values):
                overall = Cell(sum(v for v in values if v is not None) / len(values), sum(c.answered or 0 for c in part),
                               sum(c.total or 0 for c in part), decimals=3)
            elif any(v is not None for v in values):
                overall.reason = "needs all three tasks of the group"
            out += part + [overall]
        return out

    columns = [GIR_PAPER_NAMES[k] for _, keys in GIR_PAPER_GROUPS for k in [*keys, "overall"]]
    t2i_edit = _rows_table("GIR-Bench · T2I and Edit (paper Table 2)", "girbench", runs, columns, paper, sort_on=7,
                           note="each group's Overall is the mean of its three tasks, as in the paper's table")
    t2i_edit.groups = [[name, len(keys) + 1] for name, keys in GIR_PAPER_GROUPS]
    return [tasks, t2i_edit]


#: The paper's Table 2: GIR-Bench-T2I and GIR-Bench-Edit, three tasks and an Overall each.
GIR_PAPER_GROUPS = [("GIR-Bench-T2I", ["numerical", "spatial", "text"]), ("GIR-Bench-Edit", ["puzzle", "sudoku", "perception"])]
GIR_PAPER_NAMES = {"numerical": "Numerical Reasoning", "spatial": "Spatial Layout", "text": "Text Rendering", "puzzle": "Visual Puzzle",
                   "sudoku": "Visual Logic", "perception": "Reasoning Perception", "overall": "Overall"}


#: GIR-Bench metric keys as the paper's table groups them (Uni, T2I, Edit).
GIR_TASKS = {
    "uni_understanding": "Uni understanding", "uni_generation": "Uni generation",
    "numerical": "T2I numerical", "spatial": "T2I spatial", "text": "T2I text",
    "puzzle": "Edit puzzle", "sudoku": "Edit sudoku", "perception": "Edit perception",
}


def _generic(runs: list[Run], with_ci: bool) -> list[Table]:
    protocol = runs[0].summary.get("protocol", "?")
    columns: list[str] = []
    for run in runs:
        columns += [k for k, v in _flatten(run.summary.get("scores", {})).items() if k not in columns and (as_number(v) is not None or v is None)]

    def cells(run: Run) -> list[Cell]:
        flat = _flatten(run.summary.get("scores", {}))
        return [_headline(run, with_ci, None, None) if c == "overall" else Cell(flat.get(c)) for c in columns]

    title = runs[0].summary.get("title", protocol)
    return [_rows_table(str(title), protocol, runs, columns, cells, sort_on=columns.index("overall") if "overall" in columns else 0)]


def _flatten(value: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, item in value.items():
        if isinstance(item, dict):
            flat.update(_flatten(item, f"{prefix}{key}/"))
        elif not isinstance(item, (list, str)):
            flat[f"{prefix}{key}"] = item
    return flat


LAYOUTS: dict[str, Layout] = {"umnibench": _umnibench, "genius": _genius, "aegis": _aegis, "wise": _wise, "girbench": _girbench}


def build_tables(runs: list[Run] | list[dict[str, Any]], *, with_ci: bool = True) -> list[Table]:
    """The paper-layout tables of every protocol among `runs` (Run objects or bare summaries)."""
    items = [r if isinstance(r, Run) else Run(r, Path(r["run_dir"]) if r.get("run_dir") else None) for r in runs]
    label_runs(items)
    by_protocol: dict[str, list[Run]] = {}
    for run in items:
        by_protocol.setdefault(run.summary.get("protocol", "?"), []).append(run)
    tables: list[Table] = []
    for protocol in sorted(by_protocol):
        members = by_protocol[protocol]
        try:
            made = LAYOUTS.get(protocol, _generic)(members, with_ci)
        except (KeyError, TypeError, AttributeError):  # a summary of another shape: still shown, flattened
            made = _generic(members, with_ci)
        deviation = _deviation_note(members)
        if deviation and made:
            made[0].note = (made[0].note + "; " if made[0].note else "") + deviation
        tables += made
    return tables


def _deviation_note(runs: list[Run]) -> str:
    """Where umni deliberately differs from the official code (scores.deviations or deviations),
    named in the table's note so no reader takes the figure for the official one unawares."""
    seen: dict[str, bool] = {}
    for run in runs:
        listed = run.summary.get("deviations") or run.summary.get("scores", {}).get("deviations") or []
        for item in listed if isinstance(listed, list) else []:
            if isinstance(item, dict) and item.get("id"):
                seen[str(item["id"])] = seen.get(str(item["id"]), False) or bool(item.get("changes_score"))
            elif isinstance(item, str):
                seen.setdefault(item, False)
    if not seen:
        return ""
    names = ", ".join(f"{k}{' (changes the score)' if v else ''}" for k, v in seen.items())
    return f"deviations from the official code: {names} — details and official-equivalent figures in summary.json"


def write_leaderboard(tables: list[Table], out: Path) -> dict[str, Path]:
    """Write Markdown, tidy long-format CSV (one row per run × metric) and JSON; return their paths."""
    from umni.store.artifacts import atomic_write_text

    out.mkdir(parents=True, exist_ok=True)
    md = out / "leaderboard.md"
    atomic_write_text(md, "\n\n".join(t.markdown() for t in tables) + "\n")
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(LONG_HEADER)
    for table in tables:
        writer.writerows(table.long_rows())
    atomic_write_text(out / "leaderboard.csv", buffer.getvalue())
    atomic_write_text(out / "leaderboard.json", json.dumps([t.to_json() for t in tables], indent=2, ensure_ascii=False))
    return {"markdown": md, "csv": out / "leaderboard.csv", "json": out / "leaderboard.json"}
