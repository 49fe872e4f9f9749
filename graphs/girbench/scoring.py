"""GIR-Bench scores of one case (and the set-level puzzle score), as compute nodes run them.

Each `score_*` function takes the case's ground truth (``truth``, a JSON-able dict the protocol passes
through `Graph.compute(..., const=...)` so it enters the cache key) and the upstream node outputs as
keyword arguments: detections, OCR lines and features arrive as plain JSON values, images as PIL
images; `score_perception` also gets the paths of the files it reads (``files``). Each returns a
dict whose ``score`` is the case's value and whose other keys are the detail a report shows. The
formulas themselves live in ``metrics.py`` and ``masks.py``.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from PIL import Image
from scipy import linalg

from umni.plugin import Detection, OcrLine

from .metrics import (
    count_labels,
    digits_to_grid,
    frechet_distance_between,
    join_ocr_text,
    mean_cosine_similarity,
    normalize_text,
    normalized_fid,
    numerical_case_correct,
    official_detection,
    official_label_counts,
    official_object_counts,
    reasoning_perception_iou,
    spatial_case,
    sudoku_accuracy,
    word_continuous_score,
)
from .sudoku import grid_box_from_digits, official_digits, official_sudoku_accuracy


def _detections(raw: Iterable[dict[str, Any]]) -> list[Detection]:
    return [Detection(label=d["label"], box=tuple(d["box"]), score=float(d["score"])) for d in raw]


def _ocr_lines(raw: Iterable[dict[str, Any]]) -> list[OcrLine]:
    return [OcrLine(text=d["text"], box=tuple(d["box"]), confidence=float(d["confidence"])) for d in raw]


def score_numerical(truth: dict[str, Any], *, detections: list[dict[str, Any]]) -> dict[str, Any]:
    """Correct (1) only when every object's count equals the expected count.

    The score uses the official counting (`official_object_counts`, where a box of "dog" can count
    for "hot dog"); umni's figure (``umni_score``), counting whole labels, is reported beside it.
    """
    expected = dict(zip(truth["objects"], truth["number"]))
    found = _detections(detections)
    counts = count_labels(found, truth["objects"])
    correct = numerical_case_correct(expected, counts)
    official_counts, missing = official_object_counts(found, truth["objects"])
    official = not missing and all(official_counts[o] == n for o, n in expected.items())
    return {
        "score": 1.0 if official else 0.0,
        "umni_score": 1.0 if correct else 0.0,
        "official_counts": official_counts,
        "correct": correct,
        "counts": counts,
        "expected": expected,
    }


def score_spatial(truth: dict[str, Any], *, detections: list[dict[str, Any]]) -> dict[str, Any]:
    """Correct (1) only when each object is detected once and every relation holds.

    The score follows the official check (``eval_SpatialLayout.check_spatial_relation``): no asked-for
    label missing, none with other than one box by the official prefix rule
    (`official_label_counts`), and no excess at all, which includes any name, asked for or not, with
    two or more boxes (`official_detection`). umni's figure (``umni_score``), counting whole asked-for
    labels only, is reported beside it.
    """
    relations = [(subject, direction, obj) for subject, direction, obj in truth["relations"]]
    found = _detections(detections)
    verdict = spatial_case(found, truth["labels"], relations)
    official_counts = official_label_counts(found, truth["labels"])
    parsed = official_detection(found, truth["labels"])
    detected = not parsed.missing and not parsed.excess and all(c == 1 for c in official_counts.values())
    # With every label detected once, the official relation boxes are umni's (the one box of each label).
    official = detected and all(verdict.relations)
    return {
        "score": 1.0 if official else 0.0,
        "umni_score": 1.0 if verdict.correct else 0.0,
        "official_counts": official_counts,
        "official_missing": parsed.missing,
        "official_excess": parsed.excess,
        "correct": verdict.correct,
        "counts": verdict.counts,
        "all_detected_once": verdict.all_detected_once,
        "relations": [bool(r) for r in verdict.relations],
    }


def score_text(truth: dict[str, Any], *, lines: list[dict[str, Any]]) -> dict[str, Any]:
    """Word-level continuous substring score of the OCR text (confidence > 0.5) against the target."""
    read = join_ocr_text(_ocr_lines(lines))
    return {"score": word_continuous_score(truth["text"], read), "read": read, "normalized": normalize_text(read)}


def score_similarity(truth: dict[str, Any], *, generated: list[float], **references: list[float]) -> dict[str, Any]:
    """Mean cosine similarity of the generated image's features to each reference's."""
    refs = np.array([references[name] for name in sorted(references)], dtype=np.float64)
    return {"score": mean_cosine_similarity(np.array(generated, dtype=np.float64), refs), "references": len(refs)}


def score_perception(truth: dict[str, Any], files: dict[str, str], *, edited: Image.Image) -> dict[str, Any]:
    """IoU at 512 px between the green region of the edit and the ground-truth mask.

    `files` names the ``mask`` and original ``image`` files to read; `truth` holds nothing the score
    uses, only the files' content hashes, which put an edited mask under a new cache key.
    """
    with Image.open(files["mask"]) as mask, Image.open(files["image"]) as original:
        result = reasoning_perception_iou(edited, mask.copy(), original.convert("RGB"))
    return {"score": result.iou, "method": result.method, "predicted_px": result.predicted_px, "target_px": result.target_px}


def _read_grid(lines: list[dict[str, Any]], size: int, grid_box: tuple[float, float, float, float], what: str) -> list[list[int]]:
    grid = digits_to_grid(_ocr_lines(lines), size, grid_box=grid_box)
    unread = [(r, c) for r in range(size) for c in range(size) if grid[r][c] == 0]
    if what == "answer" and unread:
        raise ValueError(f"the answer image was read without digits in cells (row, col) {', '.join(map(str, unread))}")
    return grid


def _scaled(box: tuple[float, float, float, float], sx: float, sy: float) -> tuple[float, float, float, float]:
    return (box[0] * sx, box[1] * sy, box[2] * sx, box[3] * sy)


def umni_cell_score(
    truth: dict[str, Any],
    edited_size: Sequence[int],
    lines: list[dict[str, Any]],
    question_lines: list[dict[str, Any]],
    answer_lines: list[dict[str, Any]],
) -> tuple[Any, str | None]:
    """umni's per-cell figure (`metrics.sudoku_accuracy`), or None and why it cannot be computed.

    The grid's place in each image is estimated from the answer image's digits (so a margin around
    the grid is no problem) and scaled to the output's size; givens and solution come from the case
    file when it has them, else from reading the question and answer images into grids.
    """
    size = truth["grid_size"]
    answer_w, answer_h = truth["answer_size"]
    box = grid_box_from_digits(official_digits(answer_lines), size) or (0.0, 0.0, float(answer_w), float(answer_h))
    try:
        solution = truth.get("solution") or _read_grid(answer_lines, size, box, "answer")
        question_w, question_h = truth.get("question_size") or truth["answer_size"]
        question_box = _scaled(box, question_w / answer_w, question_h / answer_h)
        grid = truth.get("grid") or _read_grid(question_lines, size, question_box, "question")
        edited_box = _scaled(box, edited_size[0] / answer_w, edited_size[1] / answer_h)
        return sudoku_accuracy(_ocr_lines(lines), grid, solution, grid_box=edited_box), None
    except ValueError as exc:
        return None, str(exc)


def score_sudoku(
    truth: dict[str, Any],
    *,
    edited: Image.Image,
    lines: list[dict[str, Any]],
    question_lines: list[dict[str, Any]],
    answer_lines: list[dict[str, Any]],
) -> dict[str, Any]:
    """The official position-based accuracy (``sudoku.py``), with umni's per-cell figure beside it.

    The official score needs only the OCR of the output, the question and the answer images, so it
    never fails on a partly read answer; umni's figure is None (with ``umni_note``) when the grids
    cannot be read.
    """
    official = official_sudoku_accuracy(lines, answer_lines, question_lines, truth["grid_size"])
    cell, note = umni_cell_score(truth, edited.size, lines, question_lines, answer_lines)
    return {
        "score": official.accuracy,
        "matched": official.matched,
        "empty_cells": official.empty_cells,
        "wrong_given_digits": official.wrong_given_digits,
        "threshold_px": official.threshold,
        "umni_score": None if cell is None else cell.accuracy,
        "umni_note": note,
        "umni_correct_cells": None if cell is None else cell.correct,
        "umni_wrong_givens": None if cell is None else cell.wrong_givens,
        "umni_conflicting_cells": None if cell is None else cell.conflicting_cells,
    }


def score_dinov3_similarity(truth: dict[str, Any], files: dict[str, str], *, generated: Image.Image) -> dict[str, Any]:
    """Official Uni similarity: mean cosine between DINOv3 features of the generated image and of
    each reference image (`dinov3.py`); ``truth["model"]`` names the checkpoint."""
    from .dinov3 import dinov3_features

    refs = []
    for name in sorted(files):
        with Image.open(files[name]) as im:
            refs.append(im.convert("RGB"))
    feats = dinov3_features([generated, *refs], model=truth["model"])
    return {"score": mean_cosine_similarity(feats[0], feats[1:]), "references": len(refs)}


def puzzle_features(truth: dict[str, Any], files: dict[str, str], *, output: Image.Image) -> dict[str, Any]:
    """InceptionV3 pool features of the output and of the solution, as the official FID sees them."""
    from .fid import inception_features

    with Image.open(files["solution"]) as im:
        solution = im.convert("RGB")
    feats = inception_features([output, solution], weights=truth["fid_weights"])
    return {"output": [float(v) for v in feats[0]], "solution": [float(v) for v in feats[1]]}


def puzzle_score(entries: Sequence[Mapping[str, Any]], *, official: bool = True) -> dict[str, Any]:
    """exp(-FID/60) of the Fréchet distance between output and solution features, over the whole set.

    `official` computes the distance with torchmetrics (`fid.fid_from_features`), as the official
    code does; otherwise with umni's scipy formula (`metrics.frechet_distance_between`), used for
    features from the run's embed role.
    """
    pairs = [e["features"] for e in entries if e["status"] == "scored"]
    if len(pairs) < 2:
        return {"score": None, "fid": None, "note": "the Fréchet distance needs features of at least 2 scored cases"}
    outputs = np.array([p["output"] for p in pairs], dtype=np.float64)
    solutions = np.array([p["solution"] for p in pairs], dtype=np.float64)
    try:
        if official:
            from .fid import fid_from_features

            fid = fid_from_features(outputs, solutions)
        else:
            with warnings.catch_warnings():
                # fewer cases than feature dimensions make the covariances singular; the metric then
                # retries with a small diagonal offset, so scipy's warning says nothing new
                warnings.simplefilter("ignore", linalg.LinAlgWarning)
                fid = frechet_distance_between(outputs, solutions)
    except ValueError as exc:
        return {"score": None, "fid": None, "note": f"Fréchet distance failed: {exc}"}
    return {"score": normalized_fid(fid), "fid": fid, "note": None}
