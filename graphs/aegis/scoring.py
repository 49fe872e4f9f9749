"""AEGIS scores: one number per case (fraction of Y) and the paper's aggregate tables.

Official behaviour (DongSky/AEGIS `eval_score/*.py`, restated in protocols.md §3):

* case score = number of Y answers / number of checklist items;
* a case whose model produced nothing (`output_text == 'failed'`) is an inference failure, a case
  whose judgement is missing or has the wrong length is an evaluation failure; both are counted and
  left out of every mean (never scored 0);
* means are over cases (data-weighted): per category, per domain group, per task. The paper's
  "Overall" is the mean over every scored case of all tasks (it reproduces Table 3, e.g. Gemini
  61.7/45.9/53.7/45.1 over 315/314/315/106 cases -> 52.9, not the 51.6 an unweighted task mean gives).
  Scores here are fractions in [0, 1]; the paper prints them x100.

Where umni differs, on purpose:

* a judge answer that is not exactly one of the official Y strings or their N counterparts is out of
  format (`prompts.parse_judge_reply` raises; the engine asks again, then records an evaluation
  failure), where the official scorer counts it as N; an answer list that is not a list (a string,
  read officially character by character; an object, read by its keys) is out of format too; a JSON
  object found inside prose is read where the official pipeline fails the case (see `deviations`; the
  summary's ``official_equivalent`` gives the official figure beside umni's, from
  `prompts.official_judgement`);
* a case that failed inference is counted as an inference failure even when a judgement exists for it
  (the official understanding scorer checks for a missing judgement first); the judge is not called
  for such cases anyway;
* `invert_negative=True` (off by default) turns Y on negatively phrased items (see
  `cases.looks_negative`) into a fail; the official score does not, and the default keeps it so.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

from .cases import CATEGORY_GROUP, DOMAIN_GROUPS, REASONING_TYPES, TASKS, AegisCase
from .prompts import ChecklistVerdict

Status = Literal["scored", "inference_failure", "evaluation_failure"]


def item_score(answers: Sequence[bool] | ChecklistVerdict, inverted: Iterable[int] = ()) -> float:
    """Fraction of checklist items passed. `inverted` lists 0-based items where N is the pass."""
    values = answers.answers if isinstance(answers, ChecklistVerdict) else tuple(answers)
    if not values:
        raise ValueError("a checklist judgement needs at least one answer")
    flip = set(inverted)
    if any(i < 0 or i >= len(values) for i in flip):
        raise ValueError(f"inverted item index out of range for {len(values)} answers: {sorted(flip)}")
    passed = sum((not a) if i in flip else bool(a) for i, a in enumerate(values))
    return passed / len(values)


@dataclass(frozen=True)
class CaseResult:
    """What one case contributes: a score, or the kind of failure that kept it from one."""

    case_id: int
    task: str
    category: str
    reasoning_type: str
    status: Status
    score: float | None = None
    detail: str = ""

    @property
    def domain_group(self) -> str:
        return CATEGORY_GROUP[self.category]


def scored(case: AegisCase, verdict: ChecklistVerdict, *, invert_negative: bool = False) -> CaseResult:
    """The result of a case the judge answered in full."""
    if len(verdict.answers) != len(case.checklist):
        raise ValueError(f"case {case.id}: {len(verdict.answers)} answers for {len(case.checklist)} checklist items")
    inverted = [i for i, item in enumerate(case.checklist) if item.negative] if invert_negative else []
    return _result(case, "scored", score=item_score(verdict, inverted))


def inference_failure(case: AegisCase, detail: str = "") -> CaseResult:
    """The model produced no usable output (error, refusal with no text, no image)."""
    return _result(case, "inference_failure", detail=detail)


def evaluation_failure(case: AegisCase, detail: str = "") -> CaseResult:
    """The judge's reply could not be used (unparseable, wrong length, not Y/N)."""
    return _result(case, "evaluation_failure", detail=detail)


def _result(case: AegisCase, status: Status, *, score: float | None = None, detail: str = "") -> CaseResult:
    return CaseResult(case.id, case.task, case.category, case.reasoning_type, status, score, detail)


class GroupStats(BaseModel):
    """Mean and spread of the scored cases of one group, and how many cases failed and why."""

    mean: float | None
    std: float | None
    scored: int
    inference_failures: int
    evaluation_failures: int

    @property
    def total(self) -> int:
        return self.scored + self.inference_failures + self.evaluation_failures


class AegisSummary(BaseModel):
    """The paper's tables. Keys: task names, category names, domain group names ("STEM",
    "Humanities", "Daily life"), reasoning types, "task/group" for Table 3's cells and "task/category"."""

    overall: GroupStats
    by_task: dict[str, GroupStats]
    by_category: dict[str, GroupStats]
    by_domain_group: dict[str, GroupStats]
    by_task_and_group: dict[str, GroupStats]
    by_task_and_category: dict[str, GroupStats]
    by_reasoning_type: dict[str, GroupStats]
    inference_failed_ids: list[int]
    evaluation_failed_ids: list[int]


def group_stats(results: Iterable[CaseResult]) -> GroupStats:
    """Mean and population std (as the official scripts print) over the scored cases only."""
    results = list(results)
    scores = [r.score for r in results if r.status == "scored" and r.score is not None]
    mean = math.fsum(scores) / len(scores) if scores else None
    std = math.sqrt(math.fsum((s - mean) ** 2 for s in scores) / len(scores)) if mean is not None else None
    return GroupStats(
        mean=mean,
        std=std,
        scored=len(scores),
        inference_failures=sum(r.status == "inference_failure" for r in results),
        evaluation_failures=sum(r.status == "evaluation_failure" for r in results),
    )


def summarize(results: Iterable[CaseResult], *, rows: bool = False) -> AegisSummary:
    """Aggregate case results into every table of the paper. Groups with no case are left out.

    With ``rows=True`` a case may come more than once, as rows of the official results file do (a
    judge reply that did not parse leaves a copy marked failed beside the written result); otherwise
    a repeated case id is an error.
    """
    results = list(results)
    ids = [r.case_id for r in results]
    if not rows and len(ids) != len(set(ids)):
        dup = sorted({i for i in ids if ids.count(i) > 1})
        raise ValueError(f"more than one result for case id(s) {dup[:10]}")

    def table(key: Callable[[CaseResult], str], order: Iterable[str]) -> dict[str, GroupStats]:
        groups: dict[str, list[CaseResult]] = {}
        for r in results:
            groups.setdefault(key(r), []).append(r)
        ordered = [k for k in order if k in groups] + sorted(k for k in groups if k not in set(order))
        return {k: group_stats(groups[k]) for k in ordered}

    categories = [c for cats in DOMAIN_GROUPS.values() for c in cats]
    cells = [f"{t}/{g}" for t in TASKS for g in DOMAIN_GROUPS]
    return AegisSummary(
        overall=group_stats(results),
        by_task=table(lambda r: r.task, TASKS),
        by_category=table(lambda r: r.category, categories),
        by_domain_group=table(lambda r: r.domain_group, DOMAIN_GROUPS),
        by_task_and_group=table(lambda r: f"{r.task}/{r.domain_group}", cells),
        by_task_and_category=table(lambda r: f"{r.task}/{r.category}", [f"{t}/{c}" for t in TASKS for c in categories]),
        by_reasoning_type=table(lambda r: r.reasoning_type, REASONING_TYPES),
        inference_failed_ids=sorted(r.case_id for r in results if r.status == "inference_failure"),
        evaluation_failed_ids=sorted(r.case_id for r in results if r.status == "evaluation_failure"),
    )
