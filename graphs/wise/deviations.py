"""Where umni's WISE scoring deliberately differs from the official code (PKU-YuanGroup/WISE).

The default score follows ``vllm_eval.py`` / ``WISE_legacy/gpt_eval.py`` (how a judge reply is read)
and the two Calculate scripts (the arithmetic). The entries below are the places umni differs; each
run lists them in ``summary.json`` (``scores.deviations``) with the number of prompts it touched, and
``scores.official_equivalent`` re-reads every kept judge reply by the official rules, so the official
figure sits beside umni's wherever a deviation can change a number.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .records import WiseRecord

#: id -> (what the official code does, what umni does, changes_score)
DEVIATIONS: dict[str, tuple[str, str, bool]] = {
    "judge-wording": (
        "the judge is asked with the authors' own protocol text",
        "the judge is asked with umni's wording of the same rubric, scale, output format, system message "
        "and request settings (temperature 0; verified: thinking off); a different text can move a judge",
        True,
    ),
    "whole-number-marks": (
        "one digit is read after a label: 'Score: 1.5' is 1, 'Consistency: 10' is 1, a legacy mark 3-9 is "
        "kept (WiScore past 1), and a 'Score: 2' is passed over for a later 'Score: 0/1'",
        "the whole number after the label is read; one that is not a mark of the scale is asked again "
        "(bounded), then counted as an invalid judge reply instead of a score",
        True,
    ),
    "think-prefix": (
        "verified: a lone '</think>' tag (the template opened the block) is removed and the reasoning "
        "before it is read, so a draft 'Score' there counts",
        "everything up to the last '</think>' is reasoning and not read",
        True,
    ),
    "failures-counted": (
        "a reply still unreadable after three asks, or a missing image, is dropped without a count; the "
        "Overall is refused when any of the 1000 prompt ids has no score",
        "such prompts are counted per category by kind (failed) and left out of the means; prompt ids "
        "with no result are listed (missing_ids) and an Overall is given whenever every category has a "
        "score, with a coverage statement; the means over the scored prompts are the same",
        False,
    ),
}


def deviations(
    records: Sequence[WiseRecord],
    umni_overall: float | None,
    official_overall: float | None,
    *,
    judge_prompt: Path | None = None,
) -> list[dict[str, Any]]:
    """Every deviation, with the prompts it touched in this run and, where it can change the score,
    umni's Overall beside the official one. With a user's judge template (``judge_prompt``) the
    wording entry says that file was used instead."""
    touched = {
        "whole-number-marks": sum(1 for r in records if _differs(r) and r.get("failure") == "invalid"),
        "think-prefix": sum(1 for r in records if _differs(r) and "</think>" in (r.get("judge_reply") or "")),
        "failures-counted": sum(1 for r in records if r.get("failure") is not None),
    }
    out = []
    for key, (official, umni, changes) in DEVIATIONS.items():
        if key == "judge-wording" and judge_prompt is not None:
            umni = f"the judge is asked with the text of {judge_prompt} (the official text when the file holds it)"
            changes = False
        entry: dict[str, Any] = {
            "id": key,
            "metric": "all",
            "official": official,
            "umni": umni,
            "changes_score": changes,
        }
        if key in touched:
            entry["cases"] = touched[key]
        if changes:
            entry["official_score"] = official_overall
            entry["umni_score"] = umni_overall
        out.append(entry)
    return out


def _differs(record: WiseRecord) -> bool:
    """Whether the official reading of the kept reply differs from what umni recorded."""
    official = record.get("official")
    if record.get("failure") is not None:
        return official is not None
    return official != record.get("marks")
