"""Visual Logic (sudoku) scored as the official ``eval_VisualLogic.py`` scores it.

The official scorer never builds a grid. It OCRs three images (the model's output, the question and
the answer) and works on pixel positions alone:

- **Digits.** Every OCR line that is not blank and has confidence strictly above 0.5 yields each of
  its digit characters, all placed at the line's box centre truncated to whole pixels (a line
  ``"53"`` puts both digits at one point).
- **Radius.** From the answer image's digit positions: the larger of the x and y ranges divided by
  ``grid_size - 1`` estimates the cell size; the radius is ``max(0.6 * cell, 60 px)``. With fewer than
  four answer digits it is a fixed 80 px.
- **Empty cells.** Answer digits farther than the radius from every question digit.
- **Each output digit**, in OCR order: if some question digit lies within the radius (the first one
  found), the digit is on a given; a different digit there adds 1 to the denominator (so two wrong
  digits on one given add 2). Otherwise it is matched to the nearest not-yet-matched empty cell
  holding the same digit within the radius, if any.
- **Accuracy** = matched / (empty cells + wrong digits on givens), 0 when that denominator is 0.

Because everything is relative to the answer image's digits, a grid drawn with a margin scores
correctly, and an answer OCR that misses a digit only shrinks the set of empty cells. Output images
are compared in their own pixel coordinates (an output at another resolution than the answer image
is not rescaled, as officially).

umni's own figure, reported beside (`metrics.sudoku_accuracy`), places digits into grid cells and
counts per cell; see `umni_cell_score` in ``scoring.py``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

#: OCR lines at or below this confidence are dropped (the official default threshold).
MIN_CONFIDENCE = 0.5
RADIUS_CELLS = 0.6
RADIUS_MIN_PX = 60.0
#: Radius used when the answer image yields fewer than four digits.
RADIUS_FALLBACK_PX = 80.0

#: (digit character, x, y): a digit and the pixel it is placed at.
Digit = tuple[str, int, int]

_DIGIT = re.compile(r"\d")


def _get(item: Any, name: str, position: int) -> Any:
    if isinstance(item, dict):
        return item[name]
    if hasattr(item, name):
        return getattr(item, name)
    return item[position]


def official_digits(lines: Iterable[Any], *, min_confidence: float = MIN_CONFIDENCE) -> list[Digit]:
    """Every digit of every kept OCR line, at the line's box centre truncated to whole pixels.

    Accepts OcrLine objects, ``{text, box, confidence}`` dicts or ``(text, box, confidence)`` tuples.
    """
    found: list[Digit] = []
    for line in lines:
        text = str(_get(line, "text", 0) or "")
        if not text.strip() or float(_get(line, "confidence", 2)) <= min_confidence:
            continue
        x0, y0, x1, y1 = (float(v) for v in _get(line, "box", 1))
        cx, cy = int((x0 + x1) / 2), int((y0 + y1) / 2)
        found += [(d, cx, cy) for d in _DIGIT.findall(text)]
    return found


def official_threshold(answer: Sequence[Digit], grid_size: int) -> float:
    """The match radius in pixels, from the spread of the answer image's digits."""
    if len(answer) < 4:
        return RADIUS_FALLBACK_PX
    xs = [x for _, x, _ in answer]
    ys = [y for _, _, y in answer]
    cell = max(max(xs) - min(xs), max(ys) - min(ys)) / (grid_size - 1) if grid_size > 1 else 100.0
    return max(cell * RADIUS_CELLS, RADIUS_MIN_PX)


@dataclass(frozen=True)
class OfficialSudoku:
    """One output scored the official way: ``accuracy = matched / (empty_cells + wrong_given_digits)``."""

    accuracy: float
    matched: int
    empty_cells: int
    wrong_given_digits: int
    threshold: float


def _near(x: float, y: float, px: float, py: float, radius: float) -> bool:
    return math.hypot(x - px, y - py) < radius


def official_sudoku_accuracy(
    predicted: Iterable[Any],
    answer: Iterable[Any],
    question: Iterable[Any],
    grid_size: int,
    *,
    min_confidence: float = MIN_CONFIDENCE,
) -> OfficialSudoku:
    """Score the OCR of an output against the OCR of the answer and question images (module doc)."""
    pred = official_digits(predicted, min_confidence=min_confidence)
    gt = official_digits(answer, min_confidence=min_confidence)
    given = official_digits(question, min_confidence=min_confidence)
    radius = official_threshold(gt, grid_size)
    given_points = {(x, y) for _, x, y in given}
    empty = [(d, x, y) for d, x, y in gt if not any(_near(x, y, qx, qy, radius) for qx, qy in given_points)]
    matched: set[int] = set()
    wrong = 0
    for digit, x, y in pred:
        on_given = next(((q, qx, qy) for q, qx, qy in given if _near(x, y, qx, qy, radius)), None)
        if on_given is not None:
            wrong += on_given[0] != digit
            continue
        best, best_distance = -1, math.inf
        for i, (d, ex, ey) in enumerate(empty):
            distance = math.hypot(x - ex, y - ey)
            if i not in matched and d == digit and distance < radius and distance < best_distance:
                best, best_distance = i, distance
        if best >= 0:
            matched.add(best)
    total = len(empty) + wrong
    return OfficialSudoku(
        accuracy=len(matched) / total if total else 0.0,
        matched=len(matched),
        empty_cells=len(empty),
        wrong_given_digits=wrong,
        threshold=radius,
    )


def grid_box_from_digits(answer: Sequence[Digit], grid_size: int) -> tuple[float, float, float, float] | None:
    """Where the grid sits, estimated from the answer image's digit centres: the span of the outer
    centres plus half a cell on every side. None when the digits do not span the grid both ways."""
    if grid_size < 2 or len(answer) < 2:
        return None
    xs = [x for _, x, _ in answer]
    ys = [y for _, _, y in answer]
    cell_w = (max(xs) - min(xs)) / (grid_size - 1)
    cell_h = (max(ys) - min(ys)) / (grid_size - 1)
    if cell_w <= 0 or cell_h <= 0:
        return None
    return (min(xs) - cell_w / 2, min(ys) - cell_h / 2, max(xs) + cell_w / 2, max(ys) + cell_h / 2)
