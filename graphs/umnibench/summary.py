"""UmniBench summary: accuracy (0–100) per question, per stage, overall and per domain, and its tables.

A stage's score is the mean of its three question accuracies and the overall score the mean of the
included questions' accuracies (with every question answered this equals pooled accuracy, as in the
paper); a domain's score pools all its answered questions. Only answered questions count
(`scoring.case_tallies`); failed ones are counted beside the scores.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from statistics import mean
from typing import Any

from umni.plugin import HeadlineParts, Number, Scores

from .cases import STAGE_QUESTIONS, STAGE_TITLES, STAGES
from .scoring import SCORED_STAGES, case_tallies


class UmniScores(Scores):
    """summary.json ``scores``: accuracies (0–100, None where nothing was answered) by stage,
    question and domain, and per question and per domain how many answers were given and how many
    failed (a domain counts the questions of the stages that are scored)."""

    overall: Number | None
    stages: dict[str, Number | None]
    questions: dict[str, Number | None]
    domains: dict[str, Number | None]
    answered: dict[str, int]
    failed: dict[str, int]
    domain_answered: dict[str, int]
    domain_failed: dict[str, int]


def _pct(correct: int, answered: int) -> float | None:
    return round(100.0 * correct / answered, 4) if answered else None


def score(records: Sequence[Mapping[str, Any]], ability: str = "full") -> UmniScores:
    totals: dict[str, int] = {}
    for record in records:
        for key, count in case_tallies(record, ability).items():
            totals[key] = totals.get(key, 0) + count
    return score_tallies(totals, ability)


def score_tallies(totals: Mapping[str, int], ability: str = "full") -> UmniScores:
    """The scores of cases whose `case_tallies` sum to `totals`."""
    stages_counted = SCORED_STAGES[ability]

    def count(key: str) -> int:
        return totals.get(key, 0)

    questions = {
        qid: _pct(count(f"question/{qid}/correct"), count(f"question/{qid}/answered"))
        for stage in STAGES for qid in STAGE_QUESTIONS[stage]
    }
    stages: dict[str, float | None] = {}
    for stage in STAGES:
        values = [v for q in STAGE_QUESTIONS[stage] if (v := questions[q]) is not None]
        stages[stage] = round(mean(values), 4) if values and stage in stages_counted else None
    included = [v for s in stages_counted for q in STAGE_QUESTIONS[s] if (v := questions[q]) is not None]
    # a domain is listed when any of its questions in a scored stage was asked (answered or failed)
    names = sorted({key[len("domain/"):key.rindex("/")] for key, n in totals.items()
                    if n and key.startswith("domain/") and not key.endswith("/correct")})
    return UmniScores(
        overall=round(mean(included), 4) if included else None,
        stages=stages,
        questions=questions,
        domains={d: _pct(count(f"domain/{d}/correct"), count(f"domain/{d}/answered")) for d in names},
        answered={qid: count(f"question/{qid}/answered") for qid in questions},
        failed={qid: count(f"question/{qid}/failed") for qid in questions},
        domain_answered={d: count(f"domain/{d}/answered") for d in names},
        domain_failed={d: count(f"domain/{d}/failed") for d in names},
    )


def headline_parts(records: Sequence[Mapping[str, Any]], ability: str = "full") -> HeadlineParts:
    """The overall as `score_tallies` makes it, the mean of the included questions' accuracies: each
    question a component weighted 100 / (questions with an answer), each case adding its right
    answers and its answers to each question."""
    included = [q for stage in SCORED_STAGES[ability] for q in STAGE_QUESTIONS[stage]]
    cases = []
    for record in records:
        counts = case_tallies(record, ability)
        cases.append({q: (float(counts.get(f"question/{q}/correct", 0)), float(counts.get(f"question/{q}/answered", 0))) for q in included})
    answered = [q for q in included if any(case[q][1] for case in cases)]
    return HeadlineParts({q: 100.0 / len(answered) for q in answered}, cases)


def score_tables(summary: dict[str, Any]) -> list[tuple[str, list[str], list[list[Any]]]]:
    s = summary["scores"]
    stage_rows = [[STAGE_TITLES[st], s["stages"][st]] + [s["questions"][q] for q in STAGE_QUESTIONS[st]] for st in STAGES]
    stage_rows.append(["Overall", s["overall"], None, None, None])
    question_rows = [[q, s["questions"][q], s["answered"][q], s["failed"][q]] for q in s["questions"]]
    domain_rows = [[d, v, s.get("domain_answered", {}).get(d), s.get("domain_failed", {}).get(d)] for d, v in s["domains"].items()]
    return [
        (f"Accuracy by stage (ability: {summary['options']['ability']})", ["Stage", "Score", "Q a", "Q b", "Q c"], stage_rows),
        ("Accuracy by question", ["Question", "Accuracy", "Answered", "Failed"], question_rows),
        ("Accuracy by domain", ["Domain", "Accuracy", "Answered", "Failed"], domain_rows),
    ]


def why_no_overall(s: UmniScores, ability: str = "full") -> str | None:
    """The Overall averages the questions of the scored stages that were answered: empty, none was."""
    if s.overall is not None:
        return None
    stages = SCORED_STAGES[ability]
    questions = [q for stage in stages for q in STAGE_QUESTIONS[stage]]
    failed = sum(s.failed[q] for q in questions)
    asked = failed + sum(s.answered[q] for q in questions)
    which = "" if stages == STAGES else f" of the {' and '.join(stages)} stages"
    return f"none of the {asked} questions{which} was answered ({failed} failed)"
