"""Where umni's AEGIS scoring deliberately differs from the official code (DongSky/AEGIS).

The official pipeline asks the judge once per case, reads the reply as a JSON object (falling back
to Python ``eval`` on the text) and, in ``eval_score/*.py``, counts an answer as Y only when it is
exactly one of ``Y``, ``y``, ``yes``, ``Yes``, ``YES``. Each entry below is listed in ``summary.json``
(``scores.deviations``) and in the README's protocol table, with the number of cases it touched in
this run; the summary's ``official_equivalent`` re-reads every judge reply by the official rules, so
the official figure sits beside umni's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from . import scoring

#: id -> (what the official code does, what umni does, changes_score)
DEVIATIONS: dict[str, tuple[str, str, bool]] = {
    "yn-exact": (
        "an answer that is not exactly Y/y/yes/Yes/YES (for example 'Y.', 'yEs', JSON true, 'maybe') counts as N",
        "such an answer is out of format: the judge is asked again (bounded) and, if it persists, the case is "
        "an evaluation failure, counted and left out of the means",
        True,
    ),
    "json-in-prose": (
        "the reply must be one JSON object (or Python literal); an object inside surrounding prose is an "
        "evaluation failure",
        "the object carrying answer_list is found inside prose or a code fence and scored",
        True,
    ),
    "no-eval": (
        "a reply that is not JSON is evaluated as Python code (the builtin eval)",
        "only literals are read (ast.literal_eval); nothing in a reply is executed",
        False,
    ),
    "failed-inference-first": (
        "the understanding scorer checks for a missing judgement before a failed inference",
        "a case whose model output failed is an inference failure whether or not a judgement exists (the "
        "judge is not called for it)",
        False,
    ),
}


def deviations(
    records: Sequence[Mapping[str, Any]], umni: scoring.AegisSummary, official: scoring.AegisSummary
) -> list[dict[str, Any]]:
    """Every deviation with the cases it touched here and, where the score can differ, both figures."""
    touched = {
        "yn-exact": sum(
            1 for r in records if r["status"] == "evaluation_failure" and (r.get("official") or {}).get("status") == "scored"
        ),
        "json-in-prose": sum(1 for r in records if r.get("judge_from_prose")),
    }
    out = []
    for key, (official_rule, umni_rule, changes) in DEVIATIONS.items():
        entry: dict[str, Any] = {"id": key, "metric": "all", "official": official_rule, "umni": umni_rule, "changes_score": changes}
        if key in touched:
            entry["cases"] = touched[key]
        if changes:
            entry["umni_score"] = _pct(umni.overall.mean)
            entry["official_score"] = _pct(official.overall.mean)
        out.append(entry)
    return out


def _pct(value: float | None) -> float | None:
    return None if value is None else round(100.0 * value, 2)
