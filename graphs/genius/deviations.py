"""Where umni's GENIUS scoring deliberately differs from the official code (arctanxarc/GENIUS).

The default score follows ``eval.py`` (three judge rounds per metric, ``round(mean)``, the copy
check, hints averaged per round) and ``cal_score.py`` (×50, data-weighted pools, 0.6/0.35/0.05, VC
counted 0 when no item has one). The entries below are listed in ``summary.json``
(``scores.deviations``) with the cases each touched, and ``scores.official_equivalent`` scores the
same judge replies by the official rules, so the official figure sits beside umni's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: id -> (what the official code does, what umni does, changes_score)
DEVIATIONS: dict[str, tuple[str, str, bool]] = {
    "unreadable-reply": (
        "a reply without a 'Label: N' line reads as 0",
        "the judge is asked again (bounded), then the metric is a counted judge failure, left out of the means",
        True,
    ),
    "out-of-scale-mark": (
        "the digits after the label are taken as they are: '1.5' reads 1, '3' reads 3 (150 after x50)",
        "a decimal or a mark above the scale is an invalid answer: asked again, then a counted failure",
        True,
    ),
    "failed-generation": (
        "a case without an output image scores 0 on every metric",
        "a degenerate image still scores 0 (counted under missing_outputs); a generation that failed "
        "(backend error after retries, a blocked input) is counted under unscored, not scored 0",
        True,
    ),
    "pixel-copy-check": (
        "the copy check is the judge's 'Copy' answer alone",
        "an output identical pixel for pixel to a hint's reference is a copy without asking the judge",
        False,
    ),
    "judge-failure-not-zero": (
        "a judge call that raises leaves the item out of the results file",
        "a failed judge call is retried, then counted by kind per metric; the other metrics of the item still count",
        False,
    ),
}


def deviations(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every deviation with the number of cases it touched in this run (where that can be told)."""
    touched = {
        "unreadable-reply": _count(records, "parse"),
        "out-of-scale-mark": _count(records, "invalid"),
        "failed-generation": sum(1 for r in records if r.get("item") is None),
    }
    out = []
    for key, (official, umni, changes) in DEVIATIONS.items():
        entry: dict[str, Any] = {"id": key, "metric": "all", "official": official, "umni": umni, "changes_score": changes}
        if key in touched:
            entry["cases"] = touched[key]
        out.append(entry)
    return out


def _count(records: Sequence[Mapping[str, Any]], kind: str) -> int:
    """Cases whose final round has a judge call that failed with `kind`."""
    def calls(round_: dict[str, Any]) -> list[dict[str, Any]]:
        found = list(round_["rc"]) + list(round_["aq"])
        for hint in round_["vc"]:
            found += list(hint["rounds"]) + ([hint["copy"]] if hint.get("copy") else [])
        return found

    count = 0
    for record in records:
        final = record.get("final_round")
        if final is None:
            continue
        round_ = record["rounds"][final]
        if any((call.get("failure") or {}).get("kind") == kind for call in calls(round_)):
            count += 1
    return count
