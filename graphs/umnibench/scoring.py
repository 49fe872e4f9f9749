"""UmniBench per-case scoring: which answers count, and one case's tallies.

A question counts toward accuracy only when it was answered; a question whose answer is missing (a
failed or blocked node) is counted under ``failed`` beside the score, never as wrong. In the
editing-only mode the generation stage, whose image came from a fixed module, is left out of the
overall and domain scores. Every score of the summary is a function of the sums of these tallies.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .cases import STAGES

#: Which stages count toward the overall score in each ability mode.
SCORED_STAGES = {
    "full": STAGES,
    "understanding": STAGES,
    "generation": STAGES,
    "editing": ("interaction", "counterfactual"),
}


def case_tallies(record: Mapping[str, Any], ability: str = "full") -> dict[str, int]:
    """One case's counts: per question and per domain (scored stages only), how many answers were
    right, how many were given and how many failed. Every score is a function of their sums."""
    stages_counted = SCORED_STAGES[ability]
    counts: dict[str, int] = {}
    domain = record["domain"]
    for qid, q in record["questions"].items():
        correct = q["correct"]
        keys = [f"question/{qid}"] + ([f"domain/{domain}"] if q["stage"] in stages_counted else [])
        for key in keys:
            if correct is None:
                counts[f"{key}/failed"] = counts.get(f"{key}/failed", 0) + 1
            else:
                counts[f"{key}/correct"] = counts.get(f"{key}/correct", 0) + int(correct)
                counts[f"{key}/answered"] = counts.get(f"{key}/answered", 0) + 1
    return counts
