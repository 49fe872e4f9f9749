"""WISE scores: WiScore per image, category means, the weighted Overall, for both prompt sets.

Inputs are plain per-prompt records (`LegacyJudgement`, `VerifiedJudgement`) so the graph's
aggregation step can call these functions with whatever its judge nodes produced.

Failures are not scores. A prompt whose judge answer could not be parsed, whose image is missing,
or whose judge call failed carries ``failure`` (a short kind such as ``"parse"`` or
``"missing_image"``) instead of marks; it is counted per category and left out of that category's
mean. (The official legacy script skips missing images when judging and refuses to report at all
when a judge answer was unreadable; excluding and counting keeps the rest of a run usable while
still showing the gap.) Expected prompts with no record at all are listed in `missing_ids`. When a
category has no scored prompt its mean, and so the Overall, is None.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, model_validator

from .cases import CATEGORIES, Variant, category_of, expected_ids, missing_ids

#: WiScore weights of Consistency, Realism, Aesthetic Quality (paper eq. 1); the sum is halved to 0-1.
WISCORE_WEIGHTS = (0.7, 0.2, 0.1)

#: Category weights of the Overall score, per set (each set's category sizes / 1000).
OVERALL_WEIGHTS: dict[Variant, dict[str, float]] = {
    "legacy": {"culture": 0.4, "time": 0.167, "space": 0.133, "biology": 0.1, "physics": 0.1, "chemistry": 0.1},
    "verified": {"culture": 0.40, "time": 0.12, "space": 0.12, "biology": 0.12, "physics": 0.12, "chemistry": 0.12},
}

MISSING_IMAGE = "missing_image"
PARSE = "parse"


class LegacyJudgement(BaseModel):
    """The legacy judge's three 0-2 marks for one prompt, or why there are none."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prompt_id: StrictInt = Field(ge=1, le=1000)
    consistency: StrictInt | None = Field(default=None, ge=0, le=2)
    realism: StrictInt | None = Field(default=None, ge=0, le=2)
    aesthetic_quality: StrictInt | None = Field(default=None, ge=0, le=2)
    failure: str | None = None

    @model_validator(mode="after")
    def _marks_or_failure(self) -> LegacyJudgement:
        marks = (self.consistency, self.realism, self.aesthetic_quality)
        if self.failure is None and any(m is None for m in marks):
            raise ValueError("give all three marks, or a failure kind instead of marks")
        if self.failure is not None and any(m is not None for m in marks):
            raise ValueError("a failed judgement carries no marks")
        return self

    @property
    def wiscore(self) -> float | None:
        if self.failure is not None:
            return None
        return wiscore(self.consistency, self.realism, self.aesthetic_quality)  # type: ignore[arg-type]


class VerifiedJudgement(BaseModel):
    """The verified judge's binary mark for one prompt, or why there is none."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prompt_id: StrictInt = Field(ge=1, le=1000)
    score: StrictInt | None = Field(default=None, ge=0, le=1)
    failure: str | None = None

    @model_validator(mode="after")
    def _score_or_failure(self) -> VerifiedJudgement:
        if (self.score is None) == (self.failure is None):
            raise ValueError("give either a score or a failure kind, not both or neither")
        return self


def wiscore(consistency: float, realism: float, aesthetic_quality: float) -> float:
    """WiScore = (0.7·C + 0.2·R + 0.1·A) / 2, in 0-1 for marks in 0-2.

    Computed in the official script's floating-point order (so (1, 1, 1) gives 0.49999999999999994,
    not 0.5): published figures come from these floats, and a mean at a rounding edge rounds as
    they do only if every step is the same.
    """
    wc, wr, wa = WISCORE_WEIGHTS
    return (wc * consistency + wr * realism + wa * aesthetic_quality) / 2


def official_mean(values: Iterable[float]) -> float:
    """``sum(values) / len(values)`` left to right, as the official Calculate scripts average (values
    in prompt-id order, the order of their score files); not `statistics.fmean`, which sums exactly."""
    items = list(values)
    return sum(items) / len(items)


def overall(category_means: Mapping[str, float | None], variant: Variant) -> float | None:
    """Weighted sum of the six category means; None if any category has no mean."""
    weights = OVERALL_WEIGHTS[variant]
    if any(category_means.get(name) is None for name in weights):
        return None
    total = 0.0  # left to right, as the official scripts add the weighted means
    for name, weight in weights.items():
        mean = category_means[name]
        assert mean is not None
        total += weight * mean
    return total


@dataclass
class CategoryResult:
    """One category: the mean over scored prompts, how many were scored, and failures by kind."""

    mean: float | None
    scored: int
    failures: dict[str, int] = field(default_factory=dict)
    #: Legacy only: means of the three raw marks (0-2), as in the paper's appendix tables.
    components: dict[str, float] = field(default_factory=dict)

    @property
    def failed(self) -> int:
        return sum(self.failures.values())


@dataclass
class WiseSummary:
    """Category results, the Overall, and what was missing, for one set."""

    variant: Variant
    metric: Literal["wiscore", "accuracy"]
    categories: dict[str, CategoryResult]
    overall: float | None
    missing_ids: list[int]
    weights: dict[str, float]

    @property
    def failures(self) -> dict[str, int]:
        total: Counter[str] = Counter()
        for result in self.categories.values():
            total.update(result.failures)
        return dict(total)


def summarize_legacy(
    judgements: Iterable[LegacyJudgement | Mapping],
    *,
    variant: Variant = "legacy",
    expected: Iterable[int] | None = None,
) -> WiseSummary:
    """Mean WiScore per category and the Overall.

    `variant` is the prompt set judged: it picks the id ranges and the Overall weights (which are the
    set's category sizes / 1000). Legacy by default; the three-mark judge on verified prompts is
    allowed. `expected` is the id list the run was meant to cover (the loaded case set); by default
    the whole set. Ids of judgements outside `expected` are an error, as are duplicates.
    """
    expected = None if expected is None else list(expected)
    items = [j if isinstance(j, LegacyJudgement) else LegacyJudgement.model_validate(j) for j in judgements]
    grouped = _group(items, variant, expected)
    categories: dict[str, CategoryResult] = {}
    for name in CATEGORIES:
        scored = [j for j in grouped[name] if j.failure is None]
        failures = Counter(j.failure for j in grouped[name] if j.failure is not None)
        components = (
            {
                "consistency": official_mean(j.consistency for j in scored),
                "realism": official_mean(j.realism for j in scored),
                "aesthetic_quality": official_mean(j.aesthetic_quality for j in scored),
            }
            if scored
            else {}
        )
        categories[name] = CategoryResult(
            mean=official_mean(j.wiscore for j in scored) if scored else None,
            scored=len(scored),
            failures=dict(failures),
            components=components,
        )
    return _summary(variant, "wiscore", categories, items, expected)


def summarize_verified(
    judgements: Iterable[VerifiedJudgement | Mapping],
    *,
    variant: Variant = "verified",
    expected: Iterable[int] | None = None,
) -> WiseSummary:
    """Accuracy (mean of binary scores) per category and the Overall.

    `variant` is the prompt set judged, as in `summarize_legacy`: verified by default; the binary
    judge on legacy prompts uses the legacy id ranges and weights.
    """
    expected = None if expected is None else list(expected)
    items = [j if isinstance(j, VerifiedJudgement) else VerifiedJudgement.model_validate(j) for j in judgements]
    grouped = _group(items, variant, expected)
    categories: dict[str, CategoryResult] = {}
    for name in CATEGORIES:
        scored = [j.score for j in grouped[name] if j.failure is None]
        failures = Counter(j.failure for j in grouped[name] if j.failure is not None)
        categories[name] = CategoryResult(
            mean=official_mean(scored) if scored else None,
            scored=len(scored),
            failures=dict(failures),
        )
    return _summary(variant, "accuracy", categories, items, expected)


def _group(items: list, variant: Variant, expected: Iterable[int] | None) -> dict[str, list]:
    allowed = set(expected_ids(variant) if expected is None else expected)
    seen: set[int] = set()
    grouped: dict[str, list] = {name: [] for name in CATEGORIES}
    for item in sorted(items, key=lambda i: i.prompt_id):  # id order: the official files' order
        if item.prompt_id in seen:
            raise ValueError(f"prompt_id {item.prompt_id} has more than one judgement")
        if item.prompt_id not in allowed:
            raise ValueError(f"prompt_id {item.prompt_id} is not one of the expected prompts")
        seen.add(item.prompt_id)
        grouped[category_of(item.prompt_id, variant)].append(item)
    return grouped


def _summary(
    variant: Variant,
    metric: Literal["wiscore", "accuracy"],
    categories: dict[str, CategoryResult],
    items: list,
    expected: Iterable[int] | None,
) -> WiseSummary:
    wanted = expected_ids(variant) if expected is None else list(expected)
    return WiseSummary(
        variant=variant,
        metric=metric,
        categories=categories,
        overall=overall({name: r.mean for name, r in categories.items()}, variant),
        missing_ids=missing_ids((i.prompt_id for i in items), wanted),
        weights=dict(OVERALL_WEIGHTS[variant]),
    )


@dataclass
class OfficialSummary:
    """The official scripts' figures for the same judge replies: category means (None where a
    category has no score), the Overall (None unless every category has one) and how many prompts
    they would score."""

    means: dict[str, float | None]
    overall: float | None
    scored: int


def summarize_official(
    readings: Iterable[tuple[int, Mapping[str, float] | None]],
    *,
    variant: Variant,
    metric: Literal["wiscore", "accuracy"],
) -> OfficialSummary:
    """Average official readings (``prompt_id`` -> marks as the official parser read them, or None
    where it gave up) by the official arithmetic: WiScore of whatever marks were read (legacy marks
    outside 0-2 included, as the legacy script keeps them), the binary score as it is, means over
    the scored prompts in id order, the Overall from the set's weights."""
    per_category: dict[str, list[float]] = {name: [] for name in CATEGORIES}
    for prompt_id, marks in sorted(readings, key=lambda item: item[0]):
        if marks is None:
            continue
        if metric == "wiscore":
            value = wiscore(marks["consistency"], marks["realism"], marks["aesthetic_quality"])
        else:
            value = float(marks["score"])
        per_category[category_of(prompt_id, variant)].append(value)
    means = {name: official_mean(values) if values else None for name, values in per_category.items()}
    return OfficialSummary(means=means, overall=overall(means, variant), scored=sum(map(len, per_category.values())))
