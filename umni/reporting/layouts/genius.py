"""GENIUS's tables. Paper layout (the main results table): Interleaved (✓/✗), Overall, then each dimension's RC, VC and
AQ under the paper's dimension names, grouped under its three primitives, two decimals; VC prints
"–" where it does not apply (Multi-Semantic has no reference image to keep), which is not a missing
score and never makes a cell or the Overall read incomplete. Tidy layout: one row per run with
Overall, pooled RC/VC/AQ and one combined column per dimension."""

from __future__ import annotations

from typing import Any

from umni.reporting.layouts.common import headline, rows_table, score
from umni.reporting.runset import Run, as_number
from umni.reporting.tables import Cell, Table

#: The paper's dimensions in its column order, under its names, and the primitives above them.
DIMENSIONS = {"implicit_pattern": "Implicit Pattern", "symbolic_constraint": "Symbolic Constraint",
              "visual_constraint": "Visual Constraint", "prior_conflicting": "Prior-Conflicting", "multi_semantic": "Multi-Semantic"}
PRIMITIVES = [("Implicit Pattern Induction", 1), ("Ad-hoc Constraint Execution", 2), ("Contextual Knowledge Adaptation", 2)]
METRICS = ("rc", "vc", "aq")
#: The input formats that give the model the context interleaved (the paper's Interleaved ✓).
INTERLEAVED = ("interleaved", "fine_grained")
#: Dimensions with no VC in a summary written before `applicable` was counted.
WITHOUT_VC = ("multi_semantic",)


def _failed(part: dict[str, Any], metric: str) -> int:
    return sum((part.get("judge_failures", {}).get(metric) or {}).values())


def _applicable(part: dict[str, Any], metric: str, cases: int | None, dimension: str | None = None) -> int | None:
    """Cases `metric` applies to: counted in the summary, or (an older summary) every case for RC and
    AQ and the scored and failed VC items for VC."""
    if "applicable" in part:
        return int(part["applicable"][metric])
    if metric != "vc":
        return cases
    if dimension is not None:
        return 0 if dimension in WITHOUT_VC else None
    return int(part.get("scored", {}).get("vc", 0)) + _failed(part, "vc")


def _overall(run: Run, with_ci: bool) -> Cell:
    s = run.summary.scores.root
    cases = s.get("cases")
    if "complete" in s:
        complete = s["complete"]
    elif cases is not None:  # an older summary: every case but those unscored or with a judge failure (at most)
        scored = s.get("scored", {})
        complete = min([cases - sum(s.get("unscored", {}).values()) - max(_failed(s, m) for m in METRICS)]
                       + [scored[m] for m in ("rc", "aq") if m in scored])
    else:
        complete = None
    return headline(run, with_ci, complete, cases)


def _metric(run: Run, part: dict[str, Any], key: str, metric: str, cases: int | None, with_ci: bool, dimension: str | None = None) -> Cell:
    applicable = _applicable(part, metric, cases, dimension)
    if applicable == 0:
        return Cell(None, applies=False)
    scored = part.get("scored", {}).get(metric)
    if scored is None and applicable is not None:  # an older summary's dimension: what was not a judge failure
        scored = applicable - _failed(part, metric)
    return score(run, key, part.get(metric), scored, applicable, with_ci=with_ci)


def _interleaved(run: Run) -> Cell:
    """The paper's Interleaved column: whether the model read the context with its images in the
    text (``input_format`` interleaved or fine_grained) rather than apart from it (edit)."""
    shown = run.summary.scores.get("input_format") or run.summary.options.get("input_format")
    return Cell(None if shown is None else str(shown) in INTERLEAVED)


def paper(runs: list[Run], with_ci: bool) -> list[Table]:
    def cells(run: Run) -> list[Cell]:
        s = run.summary.scores.root
        out = [_interleaved(run), _overall(run, with_ci)]
        for dimension in DIMENSIONS:
            part = s.get("dimensions", {}).get(dimension)
            if part is None:
                out += [Cell(None) for _ in METRICS]
                continue
            cases = part.get("cases", part.get("items"))
            out += [_metric(run, part, f"dimensions/{dimension}/{m}", m, cases, with_ci, dimension) for m in METRICS]
        return out

    columns = ["Interleaved", "Overall"] + [m.upper() for _ in DIMENSIONS for m in METRICS]
    table = rows_table("GENIUS · main table (paper layout)", "genius", runs, columns, cells, sort_on=1,
                       note="0–100; Overall = 0.6·RC + 0.35·VC + 0.05·AQ over the pooled items; Interleaved: ✓ the context's "
                       "images were placed in its text (input_format interleaved or fine_grained), ✗ given apart (edit)")
    table.groups = [["", 1], ["", 1]] + [[title, len(METRICS)] for title in DIMENSIONS.values()]
    table.supergroups = [["", 2]] + [[name, n * len(METRICS)] for name, n in PRIMITIVES]
    return [table]


def tidy(runs: list[Run], with_ci: bool) -> list[Table]:
    dims = sorted({d for r in runs for d in r.summary.scores.get("dimensions", {})})

    def cells(run: Run) -> list[Cell]:
        s = run.summary.scores.root
        cases = s.get("cases")
        weights = s.get("weights", {"rc": 0.6, "vc": 0.35, "aq": 0.05})
        out = [_overall(run, with_ci)] + [_metric(run, s, m, m, cases, with_ci) for m in METRICS]
        for dim in dims:
            d = s.get("dimensions", {}).get(dim)
            if not d:
                out.append(Cell(None))
                continue
            parts = [as_number(d.get(m)) for m in METRICS]
            value = round(sum(weights[m] * p for m, p in zip(METRICS, parts)), 2) if None not in parts else None
            items = d.get("items")
            cell = Cell(value, items - d.get("missing_outputs", 0) if items is not None else None, d.get("cases", items))
            if value is None and _applicable(d, "vc", items, dim) == 0:
                cell.reason = "no VC applies here: its RC and AQ are in the paper layout"
            out.append(cell)
        return out

    return [rows_table("GENIUS · dimensions", "genius", runs, ["Overall", "RC", "VC", "AQ", *dims], cells,
                       note="dimension columns: RC/VC/AQ combined with the run's weights (as Overall)")]
