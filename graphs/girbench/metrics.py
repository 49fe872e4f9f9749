"""GIR-Bench's classical (non-judge) metrics, as pure functions of tool outputs.

Each metric takes what a tool returned (detections, OCR lines, feature vectors) and the case's
ground truth, and returns a number or a verdict; no model is called here, so every formula can be
checked by hand. The formulas follow the official evaluation code (lihxxx/GIR-Bench, ``eval/``),
because the published numbers came from it; where the code and the paper differ, or where the code
has a quirk, the docstring says which way we went.

Reasoning perception (green mask extraction and IoU) lives in ``masks.py`` and is re-exported here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import linalg

from .masks import GreenMaskSettings, PerceptionScore, extract_green_mask, mask_iou, reasoning_perception_iou

__all__ = [
    "Box",
    "GreenMaskSettings",
    "PerceptionScore",
    "SpatialVerdict",
    "SudokuScore",
    "accuracy",
    "count_labels",
    "digit_positions",
    "digits_to_grid",
    "extract_green_mask",
    "feature_statistics",
    "frechet_distance",
    "frechet_distance_between",
    "join_ocr_text",
    "label_key",
    "mask_iou",
    "mean_cosine_similarity",
    "normalize_text",
    "normalized_fid",
    "numerical_case_correct",
    "OfficialDetection",
    "official_box_keys",
    "official_detection",
    "official_label_counts",
    "official_object_counts",
    "reasoning_perception_iou",
    "relation_holds",
    "spatial_case",
    "sudoku_accuracy",
    "union_box",
    "word_continuous_score",
]

#: (x0, y0, x1, y1) in pixels, y growing downward.
Box = tuple[float, float, float, float]

#: OCR lines at or below this confidence are dropped (the paper and the code keep "> 0.5").
OCR_MIN_CONFIDENCE = 0.5


# ---------------------------------------------------------------------------------------------------
# Shared helpers


def accuracy(verdicts: Iterable[bool]) -> float:
    """Fraction of True verdicts; an empty set has no accuracy, so it raises instead of giving 0."""
    flags = list(verdicts)
    if not flags:
        raise ValueError("no verdicts to average")
    return sum(1 for f in flags if f) / len(flags)


def label_key(label: str) -> str:
    """Label compared loosely: case, underscores for spaces, runs of spaces and an instance suffix
    (the official detector names instances ``dog_1``, ``dog_2``) do not make two labels different."""
    return " ".join(re.sub(r"_\d+$", "", label.strip()).replace("_", " ").lower().split())


def _field(item: Any, name: str, position: int) -> Any:
    """Read `name` from a dataclass-like object, or position `position` from a tuple."""
    if hasattr(item, name):
        return getattr(item, name)
    return item[position]


# ---------------------------------------------------------------------------------------------------
# Numerical reasoning


def count_labels(detections: Iterable[Any], labels: Sequence[str]) -> dict[str, int]:
    """How many detections carry each asked-for label (Detection objects or bare label strings).

    Detections of labels that were not asked for are ignored, as in the official code.
    """
    counts = {label: 0 for label in labels}
    by_key = {label_key(label): label for label in labels}
    for det in detections:
        name = det if isinstance(det, str) else _field(det, "label", 0)
        label = by_key.get(label_key(name))
        if label is not None:
            counts[label] += 1
    return counts


def numerical_case_correct(
    expected: Mapping[str, int], counts: Mapping[str, int], missing: Iterable[str] = ()
) -> bool:
    """A case counts only when every expected count is exact and no expected object is missing.

    The counts are interdependent (legs and heads), so partial credit would reward a broken chain of
    reasoning. `missing` holds objects the detector explicitly reported absent; an object with no
    count at all is missing too. Objects that were not asked for do not matter.
    """
    missing_keys = {label_key(m) for m in missing}
    counts_by_key = {label_key(k): v for k, v in counts.items()}
    for obj, want in expected.items():
        key = label_key(obj)
        got = counts_by_key.get(key, 0)
        if key in missing_keys or got == 0 or got != want:
            return False
    return True


def official_box_keys(detections: Iterable[Any], labels: Sequence[str]) -> tuple[dict[str, int], list[str]]:
    """The stated count per asked-for label and the box keys, as the official code ends up with them.

    The official detector reply states a count per object and keys its boxes
    ``<object with underscores>_<n>``; the official parser then renames a key to a longer object
    whose name without its first word equals the key's name (``dog_1`` becomes ``hot dog_1`` when
    "hot dog" is asked for, ``car_1`` becomes ``red car_1``). Here the stated count is the number of
    detections carrying the label and the boxes are keyed as the official reply keys them.
    """
    by_key = {label_key(label): label for label in labels}
    stated = {label: 0 for label in labels}
    seen: dict[str, int] = {}
    keys = []
    for det in detections:
        name = det if isinstance(det, str) else _field(det, "label", 0)
        label = by_key.get(label_key(name))
        if label is not None:
            stated[label] += 1
        base = (label or name).replace(" ", "_")
        seen[base] = seen.get(base, 0) + 1
        keys.append(f"{base}_{seen[base]}")
    longer: dict[str, list[str]] = {}
    for label in labels:
        words = label.split(" ")
        if len(words) >= 2:
            longer.setdefault(" ".join(words[1:]), []).append(label)
    final_keys = []
    for key in keys:
        spaced = key.replace("_", " ")
        suffix = "_" + key.split("_")[-1] if "_" in key and key.split("_")[-1].isdigit() else ""
        if spaced in labels:
            final_keys.append(spaced + suffix)
            continue
        base_name = spaced[: -len(suffix)] if suffix else spaced
        final_keys.append(max(longer[base_name], key=len) + suffix if base_name in longer else key)
    return stated, final_keys


@dataclass(frozen=True)
class OfficialDetection:
    """What the official parser (``utils.process_detection_result``) makes of the detector reply.

    `counts` per asked-for label, `missing` labels and `excess` names (asked for or not), in the
    order the official code lists them.
    """

    counts: dict[str, int]
    missing: list[str]
    excess: list[str]


def _official_base(key: str) -> str:
    """A box key's object name as the official parser takes it: the numeric suffix dropped, every
    underscore a space (``car_seat_1`` -> ``car seat``, ``red car_2`` -> ``red car``)."""
    parts = key.split("_")
    return "_".join(parts[:-1]).replace("_", " ") if "_" in key and parts[-1].isdigit() else key


def official_detection(detections: Iterable[Any], labels: Sequence[str]) -> OfficialDetection:
    """The official parser's counts, missing and excess objects for a reply derived from detections.

    The reply states, per label, the number of detections carrying it and lists the labels with none
    as missing; boxes are keyed and renamed as `official_box_keys` says. Then, as the official code:
    a label stated more than once is excess, and so is every box name (asked for or not) with two or
    more boxes after renaming; a label's count is the larger of its stated count and its boxes; the
    reply's missing list is applied last, so a label stated 0 times is missing with count 0 even when
    a renamed box carries its name.
    """
    stated, keys = official_box_keys(detections, labels)
    boxes: dict[str, int] = {}
    for key in keys:
        base = _official_base(key)
        boxes[base] = boxes.get(base, 0) + 1
    excess = [label for label in labels if stated[label] > 1]
    excess += [name for name, n in boxes.items() if n > 1 and name not in excess]
    missing = [label for label in labels if stated[label] == 0]
    counts = {label: 0 if label in missing else max(stated[label], boxes.get(label, 0)) for label in labels}
    return OfficialDetection(counts=counts, missing=missing, excess=excess)


def official_object_counts(detections: Iterable[Any], labels: Sequence[str]) -> tuple[dict[str, int], list[str]]:
    """Per asked-for label, the count the official numerical check ends with, and the missing labels
    (see `official_detection`)."""
    found = official_detection(detections, labels)
    return found.counts, found.missing


# ---------------------------------------------------------------------------------------------------
# Spatial layout

#: A relation fails when the centres are closer than this fraction of the summed box sizes on both axes.
SPATIAL_OVERLAP_FRACTION = 0.25
#: The unit offset's component along the stated direction must exceed this.
SPATIAL_DIRECTION_MIN = 0.5
#: Offsets left after removing the overlap margin that are smaller than this count as zero (code's 1e-3).
_SPATIAL_EPS = 1e-3


def union_box(boxes: Sequence[Box]) -> Box:
    """The smallest box holding all `boxes`; a group of objects is placed by its union."""
    if not boxes:
        raise ValueError("no boxes to merge")
    return (
        min(b[0] for b in boxes),
        min(b[1] for b in boxes),
        max(b[2] for b in boxes),
        max(b[3] for b in boxes),
    )


def relation_holds(subject: Box, obj: Box, direction: str | None, *, overlap_fraction: float = SPATIAL_OVERLAP_FRACTION) -> bool:
    """Whether `subject` lies in `direction` of `obj` (image coordinates: y grows downward).

    `direction` is compared exactly, as officially: any word other than left, right, above, up, below,
    down (``"Left"`` included) is a relation that does not hold. The offset is subject centre minus
    object centre. If on every axis that offset is within
    ``overlap_fraction * (size_subject + size_object)`` (up to the code's 1e-3 tolerance) the two
    boxes sit on top of each other and no direction holds. Otherwise the offset is made a unit vector
    and its component along the direction must exceed 0.5 (about 60 degrees either side).
    """
    s = np.asarray(subject, dtype=float)
    o = np.asarray(obj, dtype=float)
    centre_s = (s[:2] + s[2:]) / 2
    centre_o = (o[:2] + o[2:]) / 2
    size_s = np.abs(s[2:] - s[:2])
    size_o = np.abs(o[2:] - o[:2])
    offset = centre_s - centre_o
    beyond_margin = np.maximum(np.abs(offset) - overlap_fraction * (size_s + size_o), 0.0)
    if np.all(beyond_margin < _SPATIAL_EPS):
        return False
    norm = float(np.linalg.norm(offset))
    if norm <= 0:
        return False
    dx, dy = offset / norm
    if direction == "left":
        return bool(dx < -SPATIAL_DIRECTION_MIN)
    if direction == "right":
        return bool(dx > SPATIAL_DIRECTION_MIN)
    if direction in ("above", "up"):
        return bool(dy < -SPATIAL_DIRECTION_MIN)
    if direction in ("below", "down"):
        return bool(dy > SPATIAL_DIRECTION_MIN)
    return False  # officially any other word ("Left", "behind") or none is a relation that never holds


@dataclass
class SpatialVerdict:
    """One spatial-layout case judged: the case counts only when `correct` is True.

    `relations` keeps each relation's own result so relation-level accuracy can be reported too
    (the official code does), even when the case already failed on detection.
    """

    counts: dict[str, int]
    all_detected_once: bool
    relations: list[bool] = field(default_factory=list)

    @property
    def correct(self) -> bool:
        return self.all_detected_once and all(self.relations)


def _group_box(names: str | Sequence[str], boxes_by_key: Mapping[str, list[Box]]) -> Box | None:
    group = [names] if isinstance(names, str) else list(names)
    found = [boxes_by_key[label_key(n)][0] for n in group if boxes_by_key.get(label_key(n))]
    return union_box(found) if found else None


def spatial_case(
    detections: Iterable[Any],
    labels: Sequence[str],
    relations: Sequence[tuple[str | Sequence[str], str | None, str | Sequence[str]]],
) -> SpatialVerdict:
    """Judge one layout from detections (Detection objects or ``(label, box)`` pairs).

    Every asked-for label must be detected exactly once, otherwise the case fails (a duplicate makes
    "the dog" ambiguous). Relations are ``(subject, direction, object)`` where subject and object are
    a label or a list of labels; a list is placed by the union of its members' boxes. A relation whose
    subject or object was not detected fails.
    """
    boxes_by_key: dict[str, list[Box]] = {label_key(label): [] for label in labels}
    for det in detections:
        key = label_key(_field(det, "label", 0))
        if key in boxes_by_key:
            box = tuple(float(v) for v in _field(det, "box", 1))
            boxes_by_key[key].append(box)  # type: ignore[arg-type]
    counts = {label: len(boxes_by_key[label_key(label)]) for label in labels}
    all_once = all(c == 1 for c in counts.values())
    results = []
    for subject, direction, obj in relations:
        subject_box = _group_box(subject, boxes_by_key)
        object_box = _group_box(obj, boxes_by_key)
        if subject_box is None or object_box is None:
            results.append(False)
            continue
        results.append(relation_holds(subject_box, object_box, direction))
    return SpatialVerdict(counts=counts, all_detected_once=all_once, relations=results)


def official_label_counts(detections: Iterable[Any], labels: Sequence[str]) -> dict[str, int]:
    """Per asked-for label, how many boxes the official spatial check counts for it.

    After the official renaming (`official_box_keys`), a box key counts for a label when it equals
    the label (spaces or underscores) or starts with ``<label>_`` and ends in a number, so the boxes
    of a longer label that begins with it count too (``car_seat_1`` counts for ``car``).
    """
    _, keys = official_box_keys(detections, labels)
    counts = {}
    for label in labels:
        forms = {label, label.replace(" ", "_")}
        counts[label] = sum(
            1
            for k in keys
            if k in forms or any(k.startswith(f"{f}_") and k.split("_")[-1].isdigit() for f in forms)
        )
    return counts


# ---------------------------------------------------------------------------------------------------
# Text rendering


def normalize_text(text: str) -> str:
    """Lowercase, drop every character outside ``[a-z0-9]`` and whitespace, collapse spaces.

    Dropped characters are deleted, not turned into spaces, as in the official code: ``"Don't"``
    becomes ``"dont"`` (one word) and ``"Make-It"`` becomes ``"makeit"``. Accented and non-Latin
    letters are dropped too, so a ground truth in another script normalises to nothing (the loader
    rejects such cases rather than let them score 0).
    """
    text = text.lower()
    text = re.sub(r"[^a-z0-9\s]", "", text)
    return re.sub(r"\s+", " ", text).strip()


def join_ocr_text(lines: Iterable[Any], *, min_confidence: float = OCR_MIN_CONFIDENCE) -> str:
    """The OCR output as one string: lines with confidence strictly above `min_confidence`, blank
    lines skipped, joined by single spaces in the order the OCR returned them.

    Accepts OcrLine objects or ``(text, box, confidence)`` tuples.
    """
    kept = []
    for line in lines:
        text = _field(line, "text", 0)
        confidence = float(_field(line, "confidence", 2))
        if text and text.strip() and confidence > min_confidence:
            kept.append(text)
    return " ".join(kept)


def word_continuous_score(ground_truth: str, predicted: str, *, distinct_words: bool = True) -> float:
    """Word-level continuous substring score s_wc: matched ground-truth words / ground-truth words.

    Exact definition implemented (equivalent to the official character-run search): both strings are
    normalised with `normalize_text`; a ground-truth word is matched when it occurs as a contiguous
    run of characters anywhere in the normalised prediction. Word boundaries in the prediction do
    not matter, so a merged OCR line ``"makeithappen"`` still matches ``make``, ``it`` and
    ``happen`` (paper appendix H, case C), and extra text is never penalised (case B). A
    consequence of the character-level rule: a short word is also matched inside a longer one
    (``it`` inside ``kit``).

    `distinct_words=True` reproduces the official count, which collects matched words in a set: a
    word that occurs twice in the ground truth is credited once, so a perfect "to be or not to be"
    scores 4/6. `distinct_words=False` credits every occurrence (the paper's wording). The
    denominator is always the number of ground-truth words, repeats included.

    An empty (normalised) prediction scores 0; a ground truth that normalises to nothing raises,
    because no rendering could satisfy it.
    """
    gt_words = normalize_text(ground_truth).split()
    if not gt_words:
        raise ValueError(f"ground truth {ground_truth!r} has no [a-z0-9] characters to match")
    pred = normalize_text(predicted)
    if not pred:
        return 0.0
    matched = [w for w in gt_words if w in pred]
    found = len(set(matched)) if distinct_words else len(matched)
    return found / len(gt_words)


# ---------------------------------------------------------------------------------------------------
# Uni (understanding-generation consistency)


def mean_cosine_similarity(generated: np.ndarray, references: np.ndarray) -> float:
    """Mean cosine similarity between one generated image's features and each reference's.

    `generated` is one vector (shape ``(d,)`` or ``(1, d)``); `references` is one vector per row.
    A zero vector has no direction, so it raises instead of silently scoring 0.
    """
    gen = np.asarray(generated, dtype=np.float64)
    refs = np.asarray(references, dtype=np.float64)
    if gen.ndim == 2 and gen.shape[0] == 1:
        gen = gen[0]
    if refs.ndim == 1:
        refs = refs[None, :]
    if gen.ndim != 1 or refs.ndim != 2 or refs.shape[1] != gen.shape[0]:
        raise ValueError(f"expected features (d,) and (n, d), got {gen.shape} and {refs.shape}")
    if refs.shape[0] == 0:
        raise ValueError("no reference features")
    gen_norm = np.linalg.norm(gen)
    ref_norms = np.linalg.norm(refs, axis=1)
    if gen_norm == 0 or np.any(ref_norms == 0):
        raise ValueError("a feature vector is all zeros; cosine similarity is undefined")
    sims = (refs @ gen) / (ref_norms * gen_norm)
    return float(np.mean(sims))


# ---------------------------------------------------------------------------------------------------
# Visual puzzle (Fréchet distance)

#: exp(-FID / 60): the official code's "exp" normalisation with max_fid 300 (scale = 300 / 5).
FID_SCALE = 60.0


def feature_statistics(features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and covariance (unbiased, n-1) of a feature set, one sample per row."""
    feats = np.asarray(features, dtype=np.float64)
    if feats.ndim != 2:
        raise ValueError(f"expected features of shape (n, d), got {feats.shape}")
    if feats.shape[0] < 2:
        raise ValueError("a covariance needs at least two feature vectors")
    return feats.mean(axis=0), np.atleast_2d(np.cov(feats, rowvar=False))


def frechet_distance(
    mu1: np.ndarray, sigma1: np.ndarray, mu2: np.ndarray, sigma2: np.ndarray, *, eps: float = 1e-6
) -> float:
    """Fréchet distance between two Gaussians: |mu1-mu2|^2 + Tr(S1 + S2 - 2 (S1 S2)^(1/2)).

    The matrix square root is taken with scipy.linalg.sqrtm. When it is not finite (a singular
    product, typical when there are fewer samples than dimensions) `eps` is added to both diagonals
    and the root taken again; a root with a non-negligible imaginary diagonal (> 1e-3) signals a real
    numerical failure and raises, otherwise the tiny imaginary part left by rounding is dropped.
    These are the standard FID steps (pytorch-fid, torchmetrics).
    """
    mu1, mu2 = np.atleast_1d(mu1).astype(np.float64), np.atleast_1d(mu2).astype(np.float64)
    sigma1, sigma2 = np.atleast_2d(sigma1).astype(np.float64), np.atleast_2d(sigma2).astype(np.float64)
    if mu1.shape != mu2.shape or sigma1.shape != sigma2.shape or sigma1.shape != (mu1.size, mu1.size):
        raise ValueError("means and covariances must have matching dimensions")
    diff = mu1 - mu2
    covmean = linalg.sqrtm(sigma1 @ sigma2)
    if not np.isfinite(covmean).all():
        offset = np.eye(sigma1.shape[0]) * eps
        covmean = linalg.sqrtm((sigma1 + offset) @ (sigma2 + offset))
    if np.iscomplexobj(covmean):
        if not np.allclose(np.diagonal(covmean).imag, 0, atol=1e-3):
            worst = float(np.max(np.abs(covmean.imag)))
            raise ValueError(f"matrix square root has a large imaginary component ({worst:.3g})")
        covmean = covmean.real
    return float(diff @ diff + np.trace(sigma1) + np.trace(sigma2) - 2 * np.trace(covmean))


def frechet_distance_between(features_a: np.ndarray, features_b: np.ndarray) -> float:
    """Fréchet distance between two feature sets (rows are samples), e.g. solutions vs outputs.

    The official score is one FID over the whole set of a model's outputs, not a per-image mean.
    """
    mu1, s1 = feature_statistics(features_a)
    mu2, s2 = feature_statistics(features_b)
    return frechet_distance(mu1, s1, mu2, s2)


def normalized_fid(fid: float, *, scale: float = FID_SCALE) -> float:
    """exp(-FID / scale) clipped to [0, 1]; a negative FID (rounding) counts as 0, giving 1."""
    if math.isnan(fid):
        raise ValueError("FID is NaN")
    return float(min(max(math.exp(-max(fid, 0.0) / scale), 0.0), 1.0))


# ---------------------------------------------------------------------------------------------------
# Visual logic (sudoku)

#: The match radius is max(0.6 * cell size, 60 px), as in the official code.
SUDOKU_RADIUS_CELLS = 0.6
SUDOKU_RADIUS_MIN_PX = 60.0


@dataclass(frozen=True)
class SudokuScore:
    """One sudoku output scored. `accuracy` = correct / (empty_cells + wrong_givens)."""

    accuracy: float
    correct: int
    empty_cells: int
    wrong_givens: int
    unplaced_digits: int
    conflicting_cells: int


def digit_positions(lines: Iterable[Any], *, min_confidence: float = OCR_MIN_CONFIDENCE) -> list[tuple[int, float, float]]:
    """Every digit the OCR read, with an estimated centre: ``(digit, x, y)``.

    Lines at or below `min_confidence` are dropped. A line holding several characters (OCR often
    merges neighbouring cells, e.g. ``"53"``) is split into equal-width slots, one per character, and
    each digit is placed at the centre of its slot; non-digit characters take a slot but yield
    nothing. (The official code puts every digit of a line at the line's centre, which can credit
    the wrong cell; splitting is our choice and is exact for a line that spans whole cells.)
    """
    found = []
    for line in lines:
        text = str(_field(line, "text", 0) or "")
        confidence = float(_field(line, "confidence", 2))
        if not text.strip() or confidence <= min_confidence:
            continue
        x0, y0, x1, y1 = (float(v) for v in _field(line, "box", 1))
        chars = text.strip()
        slot = (x1 - x0) / len(chars)
        cy = (y0 + y1) / 2
        for i, ch in enumerate(chars):
            if ch.isdigit() and ch.isascii():
                found.append((int(ch), x0 + slot * (i + 0.5), cy))
    return found


def _cell_geometry(grid_size: int, grid_box: Box) -> tuple[float, float, float, float, float]:
    x0, y0, x1, y1 = grid_box
    cell_w = (x1 - x0) / grid_size
    cell_h = (y1 - y0) / grid_size
    if cell_w <= 0 or cell_h <= 0:
        raise ValueError(f"grid box {grid_box} has no area")
    radius = max(SUDOKU_RADIUS_CELLS * max(cell_w, cell_h), SUDOKU_RADIUS_MIN_PX)
    return x0, y0, cell_w, cell_h, radius


def _place_digits(
    digits: Sequence[tuple[int, float, float]], grid_size: int, grid_box: Box
) -> tuple[dict[tuple[int, int], list[int]], int]:
    """Map each digit to the nearest cell centre within the match radius.

    Distances are Euclidean to cell centres; a digit at or beyond the radius of every centre is not
    placed. Ties (a digit exactly between centres) go to the first cell in row-major order.
    """
    x0, y0, cell_w, cell_h, radius = _cell_geometry(grid_size, grid_box)
    centres_x = x0 + cell_w * (np.arange(grid_size) + 0.5)
    centres_y = y0 + cell_h * (np.arange(grid_size) + 0.5)
    cells: dict[tuple[int, int], list[int]] = {}
    unplaced = 0
    for digit, x, y in digits:
        dist = np.hypot(x - centres_x[None, :], y - centres_y[:, None])  # [row, col]
        flat = int(np.argmin(dist))  # argmin returns the first minimum: row-major tie-break
        row, col = divmod(flat, grid_size)
        if dist[row, col] < radius:
            cells.setdefault((row, col), []).append(digit)
        else:
            unplaced += 1
    return cells, unplaced


def sudoku_accuracy(
    lines: Iterable[Any],
    grid: Sequence[Sequence[int]],
    solution: Sequence[Sequence[int]],
    *,
    grid_box: Box,
    min_confidence: float = OCR_MIN_CONFIDENCE,
) -> SudokuScore:
    """Score a solved-sudoku image from its OCR: correct fills / (empty cells + overwritten givens).

    `grid` holds the givens (0 = empty), `solution` the full answer, `grid_box` where the puzzle
    sits in the output image (the whole image for the benchmark's renders). Digits are placed with
    `digit_positions` and the nearest-cell rule of `_place_digits` (radius max(0.6 * cell, 60 px)).

    - An empty cell is correctly filled when digits were placed in it and all of them equal the
      solution; a cell holding two different digits is a conflict and is not credited. (The official
      code credits a cell if any digit near it is right; we are stricter so that writing several
      candidates in one cell cannot score.)
    - A given cell is wrongly overwritten when any digit placed in it differs from the given; each
      such cell adds 1 to the denominator (the official code adds 1 per wrong digit, which differs
      only when the OCR reads several wrong digits in one given cell).
    - Digits placed nowhere are ignored, as are repeats of the given digit in a given cell.
    """
    size = len(grid)
    if size == 0 or any(len(row) != size for row in grid) or len(solution) != size or any(len(r) != size for r in solution):
        raise ValueError("grid and solution must both be square and of the same size")
    cells, unplaced = _place_digits(digit_positions(lines, min_confidence=min_confidence), size, grid_box)
    empty = correct = wrong_givens = conflicts = 0
    for r in range(size):
        for c in range(size):
            placed = set(cells.get((r, c), ()))
            if len(placed) > 1:
                conflicts += 1
            if grid[r][c] == 0:
                empty += 1
                if placed == {solution[r][c]}:
                    correct += 1
            elif placed - {grid[r][c]}:
                wrong_givens += 1
    denominator = empty + wrong_givens
    if denominator == 0:
        raise ValueError("the puzzle has no empty cells, so there is nothing to score")
    return SudokuScore(
        accuracy=correct / denominator,
        correct=correct,
        empty_cells=empty,
        wrong_givens=wrong_givens,
        unplaced_digits=unplaced,
        conflicting_cells=conflicts,
    )


def digits_to_grid(
    lines: Iterable[Any], grid_size: int, *, grid_box: Box, min_confidence: float = OCR_MIN_CONFIDENCE
) -> list[list[int]]:
    """Read a rendered puzzle or answer back into a grid (0 = nothing read), via the same placement
    rule as scoring. Useful when a case file carries only ``grid_size`` and the grid must come from
    the question/answer images, as the official code does. A cell read as two different digits
    raises, since a reference image must be unambiguous.
    """
    cells, _ = _place_digits(digit_positions(lines, min_confidence=min_confidence), grid_size, grid_box)
    out = [[0] * grid_size for _ in range(grid_size)]
    for (r, c), digits in cells.items():
        if len(set(digits)) > 1:
            raise ValueError(f"cell ({r}, {c}) was read as several digits {sorted(set(digits))}")
        out[r][c] = digits[0]
    return out
