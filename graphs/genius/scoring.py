"""GENIUS scores: per-item RC / VC / AQ from repeated judge rounds, dimension tables, the Overall.

Inputs are plain per-item records (`GeniusItem`) so the graph's aggregation step can build them from
its judge nodes. The rules, and where they come from:

* Each metric is judged in several rounds (3 officially) with marks 0-2. The item's mark is
  ``round(mean of the rounds)`` with Python's built-in ``round`` (ties to even), as ``round(mean)``
  in the official scoring reads. With three complete rounds the mean is a multiple of 1/3, so no tie
  can occur; ties (x.5) only arise when a round failed and `min_valid_rounds` lets the rest count.
* A round is an int or a `JudgeFailure`. By default any failed round makes the item's metric a
  failure: it is counted by kind and left out of the mean, never scored 0 (the official code scores
  an unreadable answer 0; umni retries upstream and then reports it).
* Visual Consistency, as the official ``eval.py`` combines it: the copy check comes first, asked once
  per hint in order and stopping at the first copy; a copy found for any hint makes the item's VC 0.
  Otherwise, in each judge round, the hints' marks are averaged (a hint that names no reference image
  counts 0), and the item's VC is ``round(mean of those per-round averages)``. `pixel_copy` is umni's
  deterministic addition to the check (exact pixel identity counts as a copy without asking).
* A missing output image scores 0 on every metric that applies (official behaviour, kept), and is
  also counted under ``missing_outputs`` so the gap stays visible.
* Marks are scaled ×50 (0-100). Averages across dimensions are data-weighted, as ``cal_score.py``
  pools its sums: every item counts once, so a dimension weighs by its number of scored items.
* Overall = 0.6·RC + 0.35·VC + 0.05·AQ over those pooled means (``cal_score.py``). VC pools only the
  items that have a VC score (multi_semantic has none); when no item has one, VC enters the Overall as
  0, as the official script does, and the summary says so. Per-dimension tables report RC, VC and AQ
  only, as the script prints them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from PIL import Image
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, model_validator

from .dataset import DIMENSIONS

#: The three judged metrics: Rule Compliance, Visual Consistency, Aesthetic Quality.
METRICS = ("rc", "vc", "aq")
OVERALL_WEIGHTS = {"rc": 0.6, "vc": 0.35, "aq": 0.05}
SCALE = 50


class JudgeFailure(BaseModel):
    """A judge round that gave no usable mark (``parse``, ``invalid``, ``backend`` …)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str = Field(min_length=1)
    detail: str = ""


Round = StrictInt | JudgeFailure


class HintJudgement(BaseModel):
    """One vc_hint: the copy-check verdict and the Visual Consistency rounds, which are empty when
    the output was found to be a copy of this or an earlier hint's reference. A hint without a
    reference image (``has_reference`` false) has neither and counts 0 in every round."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    copied: StrictBool | JudgeFailure | None = False
    rounds: list[Round] = Field(default_factory=list)
    has_reference: bool = True


class GeniusItem(BaseModel):
    """Everything the judges said about one case's output."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    dimension: str
    id: StrictStr | StrictInt
    #: How many vc_hints the case has (0 for multi_semantic).
    vc_hints: int = Field(ge=0)
    #: Whether some hint names a reference image (official ``has_vc_task``); VC applies only then.
    #: Records written before hints without images were read leave it unset: every hint had one.
    vc_task: bool | None = None
    output_missing: bool = False
    rc: list[Round] = Field(default_factory=list)
    aq: list[Round] = Field(default_factory=list)
    vc: list[HintJudgement] = Field(default_factory=list)

    @model_validator(mode="after")
    def _consistent(self) -> GeniusItem:
        if self.dimension not in DIMENSIONS:
            raise ValueError(f"unknown dimension {self.dimension!r}; known: {', '.join(DIMENSIONS)}")
        if self.output_missing:
            if self.rc or self.aq or self.vc:
                raise ValueError("an item without an output image has no judge rounds")
            return self
        if not self.rc or not self.aq:
            raise ValueError("an item with an output needs at least one rc and one aq round")
        if len(self.vc) != self.vc_hints:
            raise ValueError(f"expected {self.vc_hints} vc judgements (one per hint), got {len(self.vc)}")
        if not any(h.copied is True or isinstance(h.copied, JudgeFailure) for h in self.vc):
            for hint in self.vc:
                if hint.has_reference and not hint.rounds:
                    raise ValueError("when no hint is a copy, every hint with a reference needs its vc rounds")
        return self

    @property
    def has_vc_task(self) -> bool:
        """VC applies when some hint names a reference image (official ``has_vc_task``)."""
        return self.vc_task if self.vc_task is not None else self.vc_hints > 0

    @property
    def key(self) -> str:
        return f"{self.dimension}/{self.id}"


def metric_mark(rounds: Sequence[int | JudgeFailure], *, min_valid_rounds: int | None = None) -> int | JudgeFailure:
    """round(mean) of the valid rounds; a JudgeFailure when fewer than `min_valid_rounds` are valid
    (default: all of them must be)."""
    if not rounds:
        raise ValueError("no rounds to score")
    valid = [r for r in rounds if not isinstance(r, JudgeFailure)]
    failures = [r for r in rounds if isinstance(r, JudgeFailure)]
    needed = len(rounds) if min_valid_rounds is None else min_valid_rounds
    if len(valid) < max(needed, 1):
        if not failures:
            raise ValueError(f"{len(rounds)} round(s) given but {needed} valid ones are required")
        return failures[0]
    return round(sum(valid) / len(valid))  # the official operation order (sum, then divide)


def visual_consistency_mark(hints: Sequence[HintJudgement], *, min_valid_rounds: int | None = None) -> float | JudgeFailure:
    """The item's VC mark (0-2, not yet scaled), combined as the official ``eval.py`` does.

    Copy checks are read in hint order: the first copy decides (0), a failed check before any copy
    is a failure. Otherwise round j's mark is the mean of the hints' round-j marks (a hint without a
    reference counts 0), and the item's mark is round(mean of the per-round marks)."""
    for hint in hints:
        if isinstance(hint.copied, JudgeFailure):
            return hint.copied
        if hint.copied is True:
            return 0
    judged = [h for h in hints if h.has_reference]
    if not judged:
        raise ValueError("no hint with a reference image: VC does not apply")
    count = len(judged[0].rounds)
    if any(len(h.rounds) != count for h in judged):
        raise ValueError("every judged hint needs the same number of vc rounds")
    per_round: list[float] = []
    for j in range(count):
        marks = [h.rounds[j] if h.has_reference else 0 for h in hints]
        failed = [m for m in marks if isinstance(m, JudgeFailure)]
        if failed:
            if min_valid_rounds is None:
                return failed[0]
            continue
        per_round.append(sum(marks) / len(marks))  # type: ignore[arg-type]
    needed = count if min_valid_rounds is None else min_valid_rounds
    if len(per_round) < max(needed, 1):
        return next(m for h in judged for m in h.rounds if isinstance(m, JudgeFailure))
    return round(sum(per_round) / len(per_round))


@dataclass(frozen=True)
class ItemScore:
    """One item on the 0-100 scale. ``vc`` is None when the case has no vc_hint."""

    key: str
    dimension: str
    rc: float | JudgeFailure
    vc: float | JudgeFailure | None
    aq: float | JudgeFailure
    output_missing: bool


def score_item(item: GeniusItem | Mapping, *, min_valid_rounds: int | None = None) -> ItemScore:
    """RC, VC and AQ of one item, ×50."""
    item = item if isinstance(item, GeniusItem) else GeniusItem.model_validate(item)
    has_vc = item.has_vc_task
    if item.output_missing:
        return ItemScore(item.key, item.dimension, 0.0, 0.0 if has_vc else None, 0.0, True)
    rc = metric_mark(item.rc, min_valid_rounds=min_valid_rounds)
    aq = metric_mark(item.aq, min_valid_rounds=min_valid_rounds)
    vc: float | JudgeFailure | None = None
    if has_vc:
        vc = _scaled(visual_consistency_mark(item.vc, min_valid_rounds=min_valid_rounds))
    return ItemScore(item.key, item.dimension, _scaled(rc), vc, _scaled(aq), False)


@dataclass
class MetricResult:
    """Mean (0-100) over scored items, how many were scored, and failures by kind."""

    mean: float | None
    scored: int
    failures: dict[str, int] = field(default_factory=dict)


@dataclass
class DimensionResult:
    items: int
    missing_outputs: int
    rc: MetricResult
    vc: MetricResult | None
    aq: MetricResult


@dataclass
class GeniusSummary:
    """Per-dimension RC/VC/AQ, pooled (data-weighted) RC/VC/AQ, the Overall, and what was missing."""

    dimensions: dict[str, DimensionResult]
    rc: MetricResult
    vc: MetricResult
    aq: MetricResult
    overall: float | None
    missing_outputs: int
    #: Expected ``dimension/id`` keys with no item record at all (not scored, not zero).
    missing_items: list[str]
    #: No item had a VC score, so the Overall counts VC as 0 (as ``cal_score.py`` does).
    vc_counted_as_zero: bool = False
    #: Items scored on every metric that applies to them (no judge failure on any).
    complete: int = 0
    weights: dict[str, float] = field(default_factory=lambda: dict(OVERALL_WEIGHTS))


def summarize(
    items: Iterable[GeniusItem | Mapping],
    *,
    expected: Iterable[str] | None = None,
    min_valid_rounds: int | None = None,
) -> GeniusSummary:
    """Score every item and aggregate. `expected` lists the ``dimension/id`` keys the run covers."""
    scores: list[ItemScore] = []
    seen: set[str] = set()
    for raw in items:
        item = raw if isinstance(raw, GeniusItem) else GeniusItem.model_validate(raw)
        if item.key in seen:
            raise ValueError(f"{item.key} has more than one item record")
        seen.add(item.key)
        scores.append(score_item(item, min_valid_rounds=min_valid_rounds))

    dimensions: dict[str, DimensionResult] = {}
    for dimension in DIMENSIONS:
        mine = [s for s in scores if s.dimension == dimension]
        if not mine:
            continue
        vc_values = [s.vc for s in mine if s.vc is not None]
        dimensions[dimension] = DimensionResult(
            items=len(mine),
            missing_outputs=sum(s.output_missing for s in mine),
            rc=_metric([s.rc for s in mine]),
            vc=_metric(vc_values) if vc_values else None,
            aq=_metric([s.aq for s in mine]),
        )
    rc = _metric([s.rc for s in scores])
    vc = _metric([s.vc for s in scores if s.vc is not None])
    aq = _metric([s.aq for s in scores])
    return GeniusSummary(
        dimensions=dimensions,
        rc=rc,
        vc=vc,
        aq=aq,
        overall=overall(rc.mean, vc.mean if vc.scored or vc.failures else 0.0, aq.mean),
        vc_counted_as_zero=not scores or not any(s.vc is not None for s in scores),
        missing_outputs=sum(s.output_missing for s in scores),
        missing_items=sorted(set(expected or ()) - seen),
        complete=sum(not any(isinstance(m, JudgeFailure) for m in (s.rc, s.vc, s.aq)) for s in scores),
    )


def overall(rc: float | None, vc: float | None, aq: float | None) -> float | None:
    """0.6·RC + 0.35·VC + 0.05·AQ; None if any part has no scored item."""
    if rc is None or vc is None or aq is None:
        return None
    return OVERALL_WEIGHTS["rc"] * rc + OVERALL_WEIGHTS["vc"] * vc + OVERALL_WEIGHTS["aq"] * aq


def _scaled(mark: float | JudgeFailure) -> float | JudgeFailure:
    return mark if isinstance(mark, JudgeFailure) else float(mark * SCALE)


def _metric(values: Sequence[float | JudgeFailure]) -> MetricResult:
    scored = [v for v in values if not isinstance(v, JudgeFailure)]
    failures = Counter(v.kind for v in values if isinstance(v, JudgeFailure))
    mean = sum(scored) / len(scored) if scored else None  # cal_score.py: a plain sum, then divide
    return MetricResult(mean=mean, scored=len(scored), failures=dict(failures))


def pixel_copy(output: Image.Image, reference: Image.Image) -> dict[str, Any]:
    """The deterministic half of the copy check: is `output` the reference image, pixel for pixel?

    Only an exact copy (same size, every RGB value equal) counts, so no generated image can be
    mistaken for a copy; resized or recompressed copies are left to the judge's ``Copy`` answer.
    The mean absolute difference (0-255, measured at the reference's size) is kept so a report can
    show near-copies too.
    """
    got = output.convert("RGB")
    want = reference.convert("RGB")
    same_size = got.size == want.size
    if not same_size:
        got = got.resize(want.size, Image.Resampling.BILINEAR)
    difference = np.abs(np.asarray(got, dtype=np.int16) - np.asarray(want, dtype=np.int16))
    exact = same_size and not difference.any()
    return {"copy": bool(exact), "same_size": same_size, "mean_abs_diff": round(float(difference.mean()), 4)}
