"""The summary.json ``scores`` of a WISE run, as a typed model (built by `Wise.summarize`).

The six categories are fields of their own, as the paper's main table has them as columns; the
three legacy marks (one table each, categories as columns) appear only under legacy scoring.
"""

from __future__ import annotations

from typing import Any

from umni.plugin import Number, Scores

#: One number per category (a mean, None where the category has no score).
CategoryMeans = dict[str, Number | None]


class OfficialEquivalent(Scores):
    """The kept judge replies re-read and averaged as the official scripts do."""

    overall: Number | None
    culture: Number | None
    time: Number | None
    space: Number | None
    biology: Number | None
    physics: Number | None
    chemistry: Number | None
    scored: int
    official_script_gives_overall: bool
    note: str


class WiseScores(Scores):
    """The paper's main table (six categories and Overall, 0-1), failures and missing ids beside."""

    optional_sections = frozenset({"consistency", "realism", "aesthetic_quality"})

    set: str
    scoring: str
    rewrite: bool
    #: the judge role's spec, pinned so tables that compare runs name the judge of each number
    judge: str | None
    metric: str
    scale: str
    overall: Number | None
    culture: Number | None
    time: Number | None
    space: Number | None
    biology: Number | None
    physics: Number | None
    chemistry: Number | None
    scored: int
    failed: int
    missing: int
    expected: int
    scored_by_category: dict[str, int]
    failed_by_category: dict[str, int]
    failures: dict[str, int]
    #: flat "category/kind" keys, so a leaderboard can lay them out as columns
    failures_by_category: dict[str, int]
    weights: dict[str, Number]
    missing_ids: list[int]
    coverage: str
    official_equivalent: OfficialEquivalent
    deviations: list[dict[str, Any]]
    consistency: CategoryMeans | None = None
    realism: CategoryMeans | None = None
    aesthetic_quality: CategoryMeans | None = None
