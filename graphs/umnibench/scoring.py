"""UmniBench scoring: accuracy (0–100) per question, per stage, overall and per domain.

Only answered questions count toward accuracy; a question whose answer is missing (a failed or
blocked node) is counted under ``failed`` beside the score, never as wrong. A stage's score is the
mean of its three question accuracies and the overall score the mean of the included questions'
accuracies (with every question answered this equals pooled accuracy, as in the paper); a domain's
score pools all its answered questions. In the editing-only mode the generation stage, whose image
came from a fixed module, is left out of the overall and domain scores.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from statistics import mean
from typing import Any

from umni.protocols.scores import Number, Scores

from .cases import STAGE_QUESTIONS, STAGES

#: Which stages count toward the overall score in each ability mode.
SCORED_STAGES = {
    "full": STAGES,
    "understanding": STAGES,
    "generation": STAGES,
    "editing": ("interaction", "counterfactual"),
}


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
    stages_counted = SCORED_STAGES[ability]
    tally: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])  # correct, answered, failed
    domains: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for record in records:
        for qid, q in record["questions"].items():
            stage = q["stage"]
            bucket = [tally[qid]] + ([domains[record["domain"]]] if stage in stages_counted else [])
            for b in bucket:
                if q["correct"] is None:
                    b[2] += 1
                else:
                    b[0] += int(q["correct"])
                    b[1] += 1
    questions = {qid: _pct(*tally[qid][:2]) for stage in STAGES for qid in STAGE_QUESTIONS[stage]}
    stages: dict[str, float | None] = {}
    for stage in STAGES:
        values = [v for q in STAGE_QUESTIONS[stage] if (v := questions[q]) is not None]
        stages[stage] = round(mean(values), 4) if values and stage in stages_counted else None
    included = [v for s in stages_counted for q in STAGE_QUESTIONS[s] if (v := questions[q]) is not None]
    return UmniScores(
        overall=round(mean(included), 4) if included else None,
        stages=stages,
        questions=questions,
        domains={d: _pct(c, a) for d, (c, a, _f) in sorted(domains.items())},
        answered={qid: tally[qid][1] for qid in questions},
        failed={qid: tally[qid][2] for qid in questions},
        domain_answered={d: a for d, (_c, a, _f) in sorted(domains.items())},
        domain_failed={d: f for d, (_c, _a, f) in sorted(domains.items())},
    )
