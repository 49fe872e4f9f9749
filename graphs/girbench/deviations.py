"""Where umni's GIR-Bench scoring deliberately differs from the official evaluation code.

The default score of every task follows ``lihxxx/GIR-Bench`` ``eval/*.py``. The entries below are
the places umni differs, listed in ``summary.json`` (``scores.deviations``) and in the README's
protocol notes; where umni computes its own figure too, the summary reports it beside the official
one (``umni_score`` of the metric).
"""

from __future__ import annotations

from typing import Any

#: id -> (metric, what the official code does, what umni does, changes_score). ``changes_score`` says
#: whether umni's *default* score differs from what the official code computes on the same tool
#: outputs; where the official rule is the default and umni's own figure is only reported beside it
#: (``umni_score``), it is False.
DEVIATIONS: dict[str, tuple[str, str, str, bool]] = {
    "sudoku-per-cell": (
        "sudoku",
        "digits are matched by pixel distance to the answer image's digits; every wrong digit read on a "
        "given adds 1 to the denominator; all digits of an OCR line sit at the line centre",
        "the official score is the default; umni's per-cell figure (umni_score) places each digit in its "
        "grid cell, counts an overwritten given once and credits a cell only when all its digits agree",
        False,
    ),
    "failures-counted": (
        "all",
        "outputs that are missing or fail are left out of the averages without a count",
        "failed and skipped cases are counted per metric (failed, skipped) and left out of the averages; "
        "the averages over the scored cases are the same",
        False,
    ),
    "spatial-label-matching": (
        "spatial",
        "a box counts for a label when its key equals the label or starts with '<label>_' and ends in a "
        "number, so the boxes of 'car seat' (car_seat_1) also count for 'car' and the case fails; any "
        "name with two or more boxes, even one nobody asked for (two dogs beside the asked cat and car), "
        "is excess and fails the case; a label the detector stated 0 times is missing even when a "
        "renamed box carries its name",
        "the official rules are the default (detections keyed as the official code keys them); umni's "
        "figure (umni_score) counts whole asked-for labels only and ignores boxes of other labels",
        False,
    ),
    "numerical-label-renaming": (
        "numerical",
        "a box whose object name is the last words of a longer asked-for object is renamed to it (a "
        "'dog' box counts for 'hot dog', a 'car' box for 'red car'); a count is the larger of the stated "
        "count and the number of boxes, except that a label stated 0 times stays missing (count 0)",
        "the official rule is the default (boxes keyed as the official reply keys them); umni's figure "
        "(umni_score) counts the detections carrying each whole label",
        False,
    ),
    "detector-interface": (
        "numerical, spatial",
        "parses an InternVL reply into stated counts, keyed boxes and missing objects",
        "receives boxes from the detect role and derives the reply from them: stated count = detections "
        "carrying the label, keys <label>_<n>, missing = no detection",
        False,
    ),
    "uni-understanding": (
        "uni_understanding",
        "not part of the released code (only the generation side is scored)",
        "a multiple-choice question about a reference image, distractors drawn from other entities",
        False,
    ),
}

#: Listed only when the run used ``features=embed``.
EMBED_FEATURES = (
    "uni_generation, puzzle",
    "DINOv3 class-token features for Uni similarity; torchmetrics' InceptionV3 2048-d features for the FID",
    "features from the run's embed role (features=embed): not comparable with published numbers",
    True,
)


def _entry(key: str, metric: str, official: str, umni: str, changes: bool) -> dict[str, Any]:
    return {"id": key, "metric": metric, "official": official, "umni": umni, "changes_score": changes}


def deviations(metrics: dict[str, dict[str, Any]], features: str) -> list[dict[str, Any]]:
    """The deviations that apply to a run: those of metrics that had cases, with umni's figure beside
    the official score where umni computes one."""
    out = []
    for key, (metric, official, umni, changes) in DEVIATIONS.items():
        names = [m.strip() for m in metric.split(",")]
        if metric != "all" and not any(metrics.get(m, {}).get("cases") for m in names):
            continue
        entry = _entry(key, metric, official, umni, changes)
        if metric in metrics and "umni_score" in metrics[metric]:
            entry["official_score"] = metrics[metric]["score"]
            entry["umni_score"] = metrics[metric]["umni_score"]
        out.append(entry)
    if features == "embed":
        out.append(_entry("features-embed", *EMBED_FEATURES))
    return out
