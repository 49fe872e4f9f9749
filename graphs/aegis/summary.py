"""The summary.json ``scores`` of an AEGIS run, from its records alone, and the report's tables.

Percentages: the paper's main table (tasks by domain group, data-weighted Overall), the same by
category and reasoning type, inference and evaluation failures counted beside every cell (never
scored), and ``official_equivalent``: the rows the official scorer would count for the same judge
replies, so the official figure sits beside umni's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from umni.plugin import HeadlineParts, Number, Scores

from . import scoring
from .cases import DOMAIN_GROUPS, REASONING_TYPES, TASKS
from .deviations import deviations
from .options import AegisOptions
from .records import AegisResult


class Counts(Scores):
    """Cases scored, and those that failed at inference or at evaluation (never scored as 0)."""

    scored: int
    inference_failures: int
    evaluation_failures: int


class CaseCounts(Scores):
    total: int
    scored: int
    inference_failures: int
    evaluation_failures: int


class GroupScores(Scores):
    """One group's score and population std (×100), and its counts."""

    score: Number | None
    std: Number | None
    scored: int
    inference_failures: int
    evaluation_failures: int


class OfficialEquivalent(Scores):
    """The same cases scored as the official scripts would (rows as the official results file has them)."""

    overall: Number | None
    by_task: dict[str, Number | None]
    cases: Counts
    stops: int


class AegisScores(Scores):
    """summary.json ``scores`` of an AEGIS run: percentages; ``main_table`` rows are tasks and
    "overall", its columns the domain groups, "overall" and the counts."""

    scale: str
    overall: Number | None
    main_table: dict[str, dict[str, Number | None]]
    by_task: dict[str, GroupScores]
    by_domain_group: dict[str, GroupScores]
    by_category: dict[str, GroupScores]
    by_reasoning_type: dict[str, GroupScores]
    by_task_and_category: dict[str, dict[str, GroupScores]]
    official_equivalent: OfficialEquivalent
    deviations: list[dict[str, Any]]
    cases: CaseCounts
    inference_failed_ids: list[int]
    evaluation_failed_ids: list[int]
    invert_negative: bool


def summarize_records(records: list[AegisResult], options: AegisOptions) -> AegisScores:
    results = [
        scoring.CaseResult(r["id"], r["task"], r["category"], r["reasoning_type"], r["status"], r["score"], r.get("detail", ""))
        for r in records
    ]
    s = scoring.summarize(results)
    official = scoring.summarize((row for r in records for row in _official_results(r)), rows=True)
    groups = tuple(DOMAIN_GROUPS)

    def row(by_group: dict[str, scoring.GroupStats], total: scoring.GroupStats) -> dict[str, float | None]:
        cells = {g: _pct(by_group[g].mean) if g in by_group else None for g in groups}
        return {**cells, "overall": _pct(total.mean), **_counts(total)}

    empty = scoring.group_stats([])
    main = {}
    for task in TASKS:
        cells = {g: s.by_task_and_group[f"{task}/{g}"] for g in groups if f"{task}/{g}" in s.by_task_and_group}
        main[task] = row(cells, s.by_task.get(task, empty))
    main["overall"] = row(s.by_domain_group, s.overall)
    return AegisScores(
        scale="percent: mean over scored cases of the fraction of checklist items answered Y",
        overall=_pct(s.overall.mean),
        main_table=main,
        by_task={k: _stats(v) for k, v in s.by_task.items()},
        by_domain_group={k: _stats(v) for k, v in s.by_domain_group.items()},
        by_category={k: _stats(v) for k, v in s.by_category.items()},
        by_reasoning_type={k: _stats(v) for k, v in s.by_reasoning_type.items()},
        by_task_and_category={
            task: {key.split("/", 1)[1]: _stats(v) for key, v in s.by_task_and_category.items() if key.startswith(f"{task}/")}
            for task in s.by_task
        },
        official_equivalent=OfficialEquivalent(
            overall=_pct(official.overall.mean),
            by_task={k: _pct(v.mean) for k, v in official.by_task.items()},
            cases=Counts(**_counts(official.overall)),
            stops=sum(1 for r in records if (r.get("official") or {}).get("stop")),
        ),
        deviations=deviations(records, s, official),
        cases=CaseCounts(total=len(records), **_counts(s.overall)),
        inference_failed_ids=s.inference_failed_ids,
        evaluation_failed_ids=s.evaluation_failed_ids,
        invert_negative=options.invert_negative,
    )


def headline_parts(records: Sequence[AegisResult]) -> HeadlineParts:
    """Overall: the mean (as a percentage) over the scored cases of their checklist scores."""
    cases = [{"score": (100.0 * score, 1.0)} if r["status"] == "scored" and (score := r["score"]) is not None else {} for r in records]
    return HeadlineParts({"score": 1.0}, cases)


def why_no_overall(s: AegisScores) -> str | None:
    """The Overall is the mean over scored cases: empty when every case failed on the way."""
    if s.overall is not None:
        return None
    c = s.cases
    return f"no case was scored ({c.inference_failures} inference failures, {c.evaluation_failures} evaluation failures)"


def score_tables(summary: dict[str, Any]) -> list[tuple[str, list[str], list[list[Any]]]]:
    s = summary["scores"]
    groups = list(DOMAIN_GROUPS)
    counts = ["Scored", "Inference failures", "Evaluation failures"]
    main_rows = []
    for name, row in s["main_table"].items():
        label = "Overall" if name == "overall" else name.capitalize()
        main_rows.append([label, *(row[g] for g in groups), row["overall"], row["scored"], row["inference_failures"], row["evaluation_failures"]])
    category_group = {c: g for g, cats in DOMAIN_GROUPS.items() for c in cats}
    category_rows = [
        [c, category_group.get(c, "?"), v["score"], v["std"], v["scored"], v["inference_failures"], v["evaluation_failures"]]
        for c, v in s["by_category"].items()
    ]
    order = [t for t in REASONING_TYPES if t in s["by_reasoning_type"]] + sorted(set(s["by_reasoning_type"]) - set(REASONING_TYPES))
    reasoning_rows = [[t, s["by_reasoning_type"][t]["score"], *(s["by_reasoning_type"][t][k] for k in _COUNT_KEYS)] for t in order]
    return [
        ("AEGIS by task and domain (score ×100)", ["Task", *groups, "Overall", *counts], main_rows),
        ("By category", ["Category", "Domain", "Score", "Std", *counts], category_rows),
        ("By reasoning type", ["Reasoning type", "Score", *counts], reasoning_rows),
    ]


_COUNT_KEYS = ("scored", "inference_failures", "evaluation_failures")


def _pct(value: float | None) -> float | None:
    return None if value is None else round(100.0 * value, 2)


def _counts(stats: scoring.GroupStats) -> dict[str, int]:
    return {k: getattr(stats, k) for k in _COUNT_KEYS}


def _stats(stats: scoring.GroupStats) -> GroupScores:
    return GroupScores(score=_pct(stats.mean), std=_pct(stats.std), **_counts(stats))


def _official_results(record: Mapping[str, Any]) -> list[scoring.CaseResult]:
    """The rows the official scorer counts for the case (a copy marked failed before the written
    result, when the reply did not parse); none where the official scripts would stop on its reply.
    Records written before this reading existed keep umni's own status and score."""
    official = record.get("official") or {"status": record["status"], "score": record["score"]}
    if official.get("stop"):
        return []
    make = partial(scoring.CaseResult, record["id"], record["task"], record["category"], record["reasoning_type"])
    copies = [make("evaluation_failure", None) for _ in range(int(official.get("failure_copies", 0)))]
    return [*copies, make(official["status"], official["score"])]
