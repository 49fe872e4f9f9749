"""A case's outcomes as one results.jsonl record, and how a record appears in the report.

A question whose answer node failed (or was blocked) keeps ``predicted`` and ``correct`` None and
names the failure; it is counted apart by the summary, never as a wrong answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

from umni.plugin import Outcome, View, failure_kind, node_status, ok_output, option_letter, record_status

from .cases import STAGE_QUESTIONS, STAGE_TITLES, STAGES, UmniCase
from .graph import UmniHandles


class StageRecord(TypedDict):
    instruction: str
    image: str | None
    status: str


class QuestionRecord(TypedDict):
    stage: str
    question: str
    options: list[str]
    answer: int
    predicted: int | None
    mode: str | None
    correct: bool | None
    status: str
    failure: str | None


class UmniRecord(TypedDict):
    """One results.jsonl line."""

    case_id: str
    domain: str
    concept: str
    stages: dict[str, StageRecord]
    questions: dict[str, QuestionRecord]
    nodes: dict[str, dict[str, Any]]


def case_record(case: UmniCase, outcomes: Mapping[str, Outcome], handles: UmniHandles) -> UmniRecord:
    stages: dict[str, StageRecord] = {}
    questions: dict[str, QuestionRecord] = {}
    for stage in STAGES:
        spec = case.stage(stage)
        made = outcomes[handles.stages[stage].image.node]
        stages[stage] = {"instruction": spec.instruction, "image": made.image.sha256 if made.image else None, "status": record_status(made)}
        for question in spec.questions:
            got = outcomes[handles.stages[stage].answers[question.id].node]
            output = ok_output(got)
            predicted = output["index"] if output else None
            questions[question.id] = {
                "stage": stage,
                "question": question.text,
                "options": question.options,
                "answer": question.answer_index,
                "predicted": predicted,
                "mode": output.get("mode") if output else None,
                "correct": (predicted == question.answer_index) if predicted is not None else None,
                "status": record_status(got),
                "failure": failure_kind(got),
            }
    return {
        "case_id": case.id,
        "domain": case.domain,
        "concept": case.concept,
        "stages": stages,
        "questions": questions,
        "nodes": node_status(outcomes),
    }


def case_accuracy(record: UmniRecord) -> dict[str, float | None]:
    """The per-case accuracy (0–100) over answered questions: what the paper correlates with people."""
    answered = [q["correct"] for q in record["questions"].values() if q["correct"] is not None]
    return {"accuracy": 100.0 * sum(answered) / len(answered) if answered else None}


def answered_right(record: UmniRecord) -> tuple[float, float] | None:
    """Questions answered right out of those answered (7/9); a failed question is counted apart."""
    answered = [q["correct"] for q in record["questions"].values() if q["correct"] is not None]
    return (float(sum(answered)), float(len(answered))) if answered else None


def answer_verdicts(record: UmniRecord) -> dict[str, bool | None]:
    """Each question's answer node (``<stage>/Q<n>``) and whether it chose the right option."""
    return {f"{q['stage']}/{qid}": q["correct"] for qid, q in record["questions"].items()}


def case_views(record: UmniRecord) -> list[View]:
    views = []
    for stage in STAGES:
        info = record["stages"][stage]
        rows: list[tuple[str, str]] = [("instruction", info["instruction"])]
        if info["status"] != "done":
            rows.append(("image", info["status"]))
        for qid in STAGE_QUESTIONS[stage]:
            q = record["questions"][qid]
            truth = f"{option_letter(q['answer'])}. {q['options'][q['answer']]}"
            if q["predicted"] is None:
                said = f"— ({q['failure'] or q['status']})"
            else:
                mark = "✓" if q["correct"] else "✗"
                said = f"{mark} {option_letter(q['predicted'])}. {q['options'][q['predicted']]}"
            rows.append((f"{qid} {q['question']}", f"{said} (key: {truth})"))
        verdicts = [record["questions"][q]["correct"] for q in STAGE_QUESTIONS[stage]]
        views.append(View(STAGE_TITLES[stage], info["image"], rows, verdict=all(v is True for v in verdicts)))
    return views
