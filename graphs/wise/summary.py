"""The summary.json ``scores`` of a WISE run, from its records alone, and the report's tables.

The six categories are fields of their own, as the paper's main table has them as columns; the
three legacy marks (one table each, categories as columns) appear only under legacy scoring.
Failures and missing prompt ids are counted beside the scores, and ``official_equivalent`` averages
the official script's reading of every kept judge reply by the official arithmetic.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from umni.plugin import HeadlineParts, Number, Scores

from . import scoring as S
from .cases import CATEGORIES, category_of, expected_ids
from .deviations import deviations
from .options import WiseOptions
from .records import WiseRecord

#: Column titles of the paper's main table.
CATEGORY_TITLES = {
    "culture": "Cultural",
    "time": "Time",
    "space": "Space",
    "biology": "Biology",
    "physics": "Physics",
    "chemistry": "Chemistry",
}

#: The legacy judge's marks (record keys) and how the paper names them.
MARKS = {"consistency": "Consistency", "realism": "Realism", "aesthetic_quality": "Aesthetic Quality"}

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


def summarize_records(records: Sequence[WiseRecord], options: WiseOptions, *, judge: str | None = None) -> WiseScores:
    """The paper's main table (six categories and Overall, 0-1), failures and missing ids beside.

    `judge` is the judge role's spec; it is echoed as ``scores.judge`` so tables that compare
    runs show which judge (and version) produced each number.
    """
    variant = options.prompt_set
    if options.scoring == "legacy":
        judged = [_legacy_judgement(r) for r in records]
        summary = S.summarize_legacy(judged, variant=variant)
    else:
        summary = S.summarize_verified([_verified_judgement(r) for r in records], variant=variant)
    expected = len(expected_ids(variant))
    missing = summary.missing_ids
    cats = summary.categories
    overall_score = _round(summary.overall)
    official = S.summarize_official(
        [(r["prompt_id"], r.get("official")) for r in records], variant=variant, metric=summary.metric
    )
    means = {name: _round(official.means[name]) for name in CATEGORIES}
    official_scores = OfficialEquivalent(
        overall=_round(official.overall),
        culture=means["culture"],
        time=means["time"],
        space=means["space"],
        biology=means["biology"],
        physics=means["physics"],
        chemistry=means["chemistry"],
        scored=official.scored,
        # the official Calculate script prints an Overall only when all 1000 prompt ids have a score
        official_script_gives_overall=official.scored == expected,
        note="every kept judge reply re-read by the official rules and averaged by the official "
        "arithmetic; prompts the official script would drop (no image, unreadable reply) are left out",
    )
    # legacy: one flat table per mark (categories as columns), as in the paper's appendix
    legacy = options.scoring == "legacy"
    marks = {mark: {name: _round(cats[name].components.get(mark)) for name in CATEGORIES} for mark in MARKS}
    means = {name: _round(cats[name].mean) for name in CATEGORIES}
    return WiseScores(
        set=variant,
        scoring=options.scoring,
        rewrite=options.rewrite,
        judge=judge,
        metric=summary.metric,
        scale=_SCALE[summary.metric],
        overall=overall_score,
        culture=means["culture"],
        time=means["time"],
        space=means["space"],
        biology=means["biology"],
        physics=means["physics"],
        chemistry=means["chemistry"],
        scored=sum(c.scored for c in cats.values()),
        failed=sum(c.failed for c in cats.values()),
        missing=len(missing),
        expected=expected,
        scored_by_category={name: cats[name].scored for name in CATEGORIES},
        failed_by_category={name: cats[name].failed for name in CATEGORIES},
        failures=dict(sorted(summary.failures.items())),
        failures_by_category={
            f"{name}/{kind}": count for name in CATEGORIES for kind, count in sorted(cats[name].failures.items())
        },
        weights=summary.weights,
        missing_ids=missing,
        coverage=_coverage_statement(len(records), expected, missing, variant, summary.overall),
        official_equivalent=official_scores,
        deviations=deviations(records, overall_score, official_scores.overall, judge_prompt=options.judge_prompt),
        consistency=marks["consistency"] if legacy else None,
        realism=marks["realism"] if legacy else None,
        aesthetic_quality=marks["aesthetic_quality"] if legacy else None,
    )


def stratum(record: WiseRecord, options: WiseOptions) -> str:
    """The prompt's category: the Overall weights all six, so each resample keeps each one."""
    return category_of(record["prompt_id"], options.prompt_set)


def headline_parts(records: Sequence[WiseRecord], options: WiseOptions) -> HeadlineParts:
    """Overall = Σ weight · category mean: a scored prompt adds its score (WiScore, or the
    binary mark) and a count of one to its category; a failed one adds neither."""
    cases = []
    for record in records:
        score = record["score"]
        scored = record.get("failure") is None and record.get("marks") is not None
        cases.append({stratum(record, options): (float(score), 1.0) if scored and score is not None else (0.0, 0.0)})
    return HeadlineParts(dict(S.OVERALL_WEIGHTS[options.prompt_set]), cases)


def score_tables(summary: dict[str, Any]) -> list[tuple[str, list[str], list[list[Any]]]]:
    s = summary["scores"]
    label = "WiScore" if s["metric"] == "wiscore" else "Accuracy"
    header = ["", *(CATEGORY_TITLES[c] for c in CATEGORIES), "Overall"]
    main = [
        [label, *(s[c] for c in CATEGORIES), s["overall"]],
        ["Scored", *(s["scored_by_category"][c] for c in CATEGORIES), s["scored"]],
        ["Failed (not scored)", *(s["failed_by_category"][c] for c in CATEGORIES), s["failed"]],
    ]
    setting = f"{s['set']} prompts{' (rewrite)' if s['rewrite'] else ''}, {s['scoring']} scoring"
    if s.get("judge"):
        setting += f", judge {s['judge']}"
    tables = [(f"WISE {label} by category ({setting})", header, main)]
    if s["failures"]:
        kinds = sorted(s["failures"])
        rows = [
            [kind, *(s["failures_by_category"].get(f"{c}/{kind}", 0) for c in CATEGORIES), s["failures"][kind]]
            for kind in kinds
        ]
        tables.append(("Failures by kind (counted apart from scores)", ["Kind", *header[1:-1], "Total"], rows))
    if s["metric"] == "wiscore":
        rows = [[MARKS[key], *(s[key][c] for c in CATEGORIES)] for key in MARKS]
        tables.append(("Mean marks (0-2) by category", ["Mark", *header[1:-1]], rows))
    shown = ", ".join(map(str, s["missing_ids"][:20])) + (" …" if s["missing"] > 20 else "")
    tables.append(
        (
            "Coverage",
            ["", "Value"],
            [
                ["Expected prompts", s["expected"]],
                ["With a result", s["expected"] - s["missing"]],
                ["Missing prompt ids", f"{s['missing']}: {shown}" if s["missing"] else "none"],
                ["Statement", s["coverage"]],
            ],
        )
    )
    return tables


_SCALE = {
    "wiscore": "0-1: mean WiScore = (0.7·C + 0.2·R + 0.1·A)/2 over scored prompts; Overall weights the six categories",
    "accuracy": "0-1: share of scored prompts judged correct (Score 1); Overall weights the six categories",
}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _legacy_judgement(record: WiseRecord) -> S.LegacyJudgement:
    marks = record.get("marks")
    if record.get("failure") is not None or marks is None:
        return S.LegacyJudgement(prompt_id=record["prompt_id"], failure=record.get("failure") or "internal")
    return S.LegacyJudgement.model_validate({"prompt_id": record["prompt_id"], **marks})


def _verified_judgement(record: WiseRecord) -> S.VerifiedJudgement:
    marks = record.get("marks")
    if record.get("failure") is not None or marks is None:
        return S.VerifiedJudgement(prompt_id=record["prompt_id"], failure=record.get("failure") or "internal")
    return S.VerifiedJudgement(prompt_id=record["prompt_id"], score=marks["score"])


def why_no_overall(s: WiseScores) -> str | None:
    """The Overall weighs all six categories, so it is empty while one has no score: for want of
    cases (a --limit, a partial case file), or because every one of its cases failed."""
    if s.overall is not None:
        return None
    empty = [name for name in CATEGORIES if s.scored_by_category[name] == 0]
    failed = [name for name in empty if s.failed_by_category[name]]
    absent = [name for name in empty if name not in failed]
    why = ([f"every case failed in {', '.join(failed)}"] if failed else []) + ([f"no cases in {', '.join(absent)}"] if absent else [])
    return "; ".join(why) or None


def _coverage_statement(records: int, expected: int, missing: list[int], variant: str, overall: float | None) -> str:
    if not missing:
        return f"all {expected} {variant} prompts have a result"
    text = (
        f"{len(missing)} of the {expected} expected {variant} prompt ids have no result (listed in missing_ids); "
        f"the scores cover the {records} prompt(s) run"
    )
    if overall is not None:
        text += ", so the Overall is not comparable with a full-set Overall"
    else:
        text += "; the Overall needs a score in every category and is left empty"
    return text
