"""UmniBench's tables. Paper layout (Tables 2 and 3 of the paper): the questions Q1–Q9 as rows
grouped by stage, each stage closed by its average ("Ave.") and the table by the overall, the runs
as columns; and the domains as rows (in the order of their average over the runs, lowest first, as
the paper orders them) with an Average column and the overall as the last row. Two decimals.
Tidy layout: one row per run (overall and stages, questions, domains)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from umni.reporting.layouts.common import MetricRow, columns_table, headline, mean_cell, rows_table, score
from umni.reporting.runset import Run, as_number
from umni.reporting.tables import Cell, Table

STAGES = {"generation": ["Q1", "Q2", "Q3"], "interaction": ["Q4", "Q5", "Q6"], "counterfactual": ["Q7", "Q8", "Q9"]}
#: The paper's names: stages as Table 2 heads its row groups, domains as Table 3 prints them.
STAGE_NAMES = {"generation": "Generation", "interaction": "Interaction", "counterfactual": "Counterfactual"}
DOMAIN_NAMES = {"Weather & Environment": "Weather & Environ."}
AVERAGE = "Ave."


def _counts(s: dict[str, Any], questions: Iterable[str]) -> tuple[int, int]:
    answered = sum(s.get("answered", {}).get(q, 0) for q in questions)
    return answered, answered + sum(s.get("failed", {}).get(q, 0) for q in questions)


def _domain_counts(s: dict[str, Any], domain: str) -> tuple[int | None, int | None]:
    """(answered, total) of a domain; unknown in a summary written before domains were counted."""
    answered = s.get("domain_answered", {}).get(domain)
    if answered is None:
        return None, None
    return answered, answered + s.get("domain_failed", {}).get(domain, 0)


def _question(q: str, with_ci: bool) -> Any:
    def make(run: Run) -> Cell:
        s = run.summary.scores.root
        return score(run, f"questions/{q}", s.get("questions", {}).get(q), *_counts(s, [q]), with_ci=with_ci)
    return make


def _stage(stage: str, with_ci: bool) -> Any:
    def make(run: Run) -> Cell:
        s = run.summary.scores.root
        return score(run, f"stages/{stage}", s.get("stages", {}).get(stage), *_counts(s, STAGES[stage]), with_ci=with_ci)
    return make


def _domain(domain: str, with_ci: bool) -> Any:
    def make(run: Run) -> Cell:
        s = run.summary.scores.root
        return score(run, f"domains/{domain}", s.get("domains", {}).get(domain), *_domain_counts(s, domain), with_ci=with_ci)
    return make


def _overall(with_ci: bool) -> Any:
    def make(run: Run) -> Cell:
        s = run.summary.scores.root
        return headline(run, with_ci, *_counts(s, [q for qs in STAGES.values() for q in qs]))
    return make


def paper(runs: list[Run], with_ci: bool) -> list[Table]:
    rows: list[MetricRow] = []
    for stage, questions in STAGES.items():
        rows += [([STAGE_NAMES[stage], q], _question(q, with_ci)) for q in questions]
        rows.append(([STAGE_NAMES[stage], AVERAGE], _stage(stage, with_ci)))
    rows.append(([AVERAGE, ""], _overall(with_ci)))
    by_question = columns_table("UmniBench · questions by stage (paper Table 2)", "umnibench", runs, ["Stage", "Question"], rows,
                              note="accuracy (0–100) per question; Ave. a stage's mean of its questions, the last row the overall")

    domains = sorted({d for r in runs for d in r.summary.scores.get("domains", {})})
    made = {d: mean_cell([_domain(d, False)(run) for run in runs]) for d in domains}

    def order(domain: str) -> tuple[int, float, str]:
        value = as_number(made[domain].value)
        return (1, 0.0, domain) if value is None else (0, value, domain)

    domain_rows: list[MetricRow] = [([DOMAIN_NAMES.get(d, d)], _domain(d, with_ci), f"domains/{d}") for d in sorted(domains, key=order)]
    domain_rows.append((["Average"], _overall(with_ci)))
    by_domain = columns_table("UmniBench · domains (paper Table 3)", "umnibench", runs, ["Domain"], domain_rows, average=True, with_ci=with_ci,
                              note="accuracy (0–100) per domain, domains in the order of their Average over the runs (lowest first), "
                              "the Average's interval resampling the runs' shared cases jointly; the last row is each run's overall")
    last = by_domain.rows[-3]  # the overall row: its Average over runs is not a figure the paper gives
    last.cells[-1] = Cell(None, applies=False)
    return [by_question, by_domain]


def tidy(runs: list[Run], with_ci: bool) -> list[Table]:
    def main(run: Run) -> list[Cell]:
        return [_overall(with_ci)(run)] + [_stage(st, with_ci)(run) for st in STAGES]

    questions = sorted({q for r in runs for q in r.summary.scores.get("questions", {})}, key=lambda q: int(q[1:]) if q[1:].isdigit() else 99)
    domains = sorted({d for r in runs for d in r.summary.scores.get("domains", {})})
    return [
        rows_table("UmniBench · overall and stages", "umnibench", runs, ["Overall", "Generation", "Interaction", "Counterfactual"], main),
        rows_table("UmniBench · questions", "umnibench", runs, questions, lambda r: [_question(q, with_ci)(r) for q in questions]),
        rows_table("UmniBench · domains", "umnibench", runs, domains, lambda r: [_domain(d, with_ci)(r) for d in domains]),
    ]
