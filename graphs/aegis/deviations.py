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
        "the reply must be one JSON object (or Python literal) once every ```python, ```json and ``` marker "
        "is deleted; an object inside surrounding prose, or behind another fence tag (```JSON), is unparsed",
        "the object carrying answer_list is found inside prose or a code fence of any tag and scored",
        True,
    ),
    "answer-list-shape": (
        "answer_list is read as whatever the reply holds: a string character by character ('YNY' is Y, N, "
        "Y), an object by its keys, a tuple or set by its members; a reply that is not a JSON object (or "
        "Python literal) gets the 12-character text 'parsed_error' as its answer list, which scores 0 on a "
        "12-item checklist (beside a row marked failed when the reply did not parse at all)",
        "answer_list must be a list of Y/N strings, one per item; anything else is asked again (bounded), "
        "then an evaluation failure",
        True,
    ),
    "no-eval": (
        "a reply that is not JSON is evaluated as Python code (the builtin eval); the scripts stop "
        "(KeyError, TypeError) on an object without reason_list or answer_list, or with a number or null "
        "as its answer list",
        "only literals are read (ast.literal_eval); nothing in a reply is executed. A reply only running "
        "it could read, or one the official scripts stop on, has no official reading: it is counted in "
        "official_equivalent.stops and left out of that figure",
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
    records: Sequence[Mapping[str, Any]], umni: scoring.AegisSummary, official_summary: scoring.AegisSummary
) -> list[dict[str, Any]]:
    """Every deviation with the cases it touched here and, where the score can differ, both figures."""
    official = [r.get("official") or {} for r in records]
    touched = {
        "yn-exact": sum(
            1
            for r, o in zip(records, official)
            if r["status"] == "evaluation_failure" and o.get("status") == "scored" and o.get("read_as", "list") == "list"
        ),
        # umni read an object the official reader does not see whole: inside prose, or behind a fence tag
        # other than python/json
        "json-in-prose": sum(
            1
            for r, o in zip(records, official)
            if r.get("judge_from_prose") or (r["status"] == "scored" and o.get("read_as") == "parsed_error")
        ),
        "answer-list-shape": sum(
            1
            for r, o in zip(records, official)
            if o.get("read_as", "list") != "list" and not (r["status"] == "scored" and o.get("read_as") == "parsed_error")
        ),
        "no-eval": sum(1 for o in official if o.get("stop")),
    }
    out = []
    for key, (official_rule, umni_rule, changes) in DEVIATIONS.items():
        entry: dict[str, Any] = {"id": key, "metric": "all", "official": official_rule, "umni": umni_rule, "changes_score": changes}
        if key in touched:
            entry["cases"] = touched[key]
        if changes:
            entry["umni_score"] = _pct(umni.overall.mean)
            entry["official_score"] = _pct(official_summary.overall.mean)
        out.append(entry)
    return out


def _pct(value: float | None) -> float | None:
    return None if value is None else round(100.0 * value, 2)
