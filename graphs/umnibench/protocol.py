"""The UmniBench graph: generate → answer Q1–Q3 → edit → answer Q4–Q6 → edit → answer Q7–Q9.

Each stage's image is the next stage's input, so errors accumulate across stages as in the paper.
Single-ability modes are bindings (the ability under test from the model, the others from fixed
modules) plus ``--option ability=...``, which only changes what is scored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field

from umni.plugin import (
    EDIT,
    GENERATE,
    UNDERSTAND,
    CaseSet,
    Graph,
    HeadlineParts,
    Outcome,
    Protocol,
    Ref,
    View,
    failure_kind,
    node_status,
    ok_output,
    option_letter,
    read_jsonl,
    record_status,
)

from . import scoring
from .cases import STAGE_QUESTIONS, STAGES, UmniCase

STAGE_TITLES = {"generation": "Stage 1 · generation", "interaction": "Stage 2 · interaction", "counterfactual": "Stage 3 · counterfactual"}


class UmniOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ability: Literal["full", "understanding", "generation", "editing"] = Field(
        default="full",
        description="the ability under test (bind the other roles to fixed modules); only changes what is scored: "
        "editing scores the interaction and counterfactual stages, the others all three",
    )


@dataclass(frozen=True)
class StageHandles:
    """One stage's image node and its questions' answer nodes (by question id)."""

    image: Ref
    answers: dict[str, Ref]


@dataclass(frozen=True)
class UmniHandles:
    stages: dict[str, StageHandles]


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


class UmniBench(Protocol[UmniCase, UmniOptions, UmniRecord, scoring.UmniScores]):
    name = "umnibench"
    title = "UmniBench self-evaluation"
    roles = (GENERATE, EDIT, UNDERSTAND)
    Options = UmniOptions

    def bundled_cases(self) -> Path:
        from umni_cases import bundled

        return bundled("umnibench") / "cases.jsonl"

    def load(self, path: Path, options: UmniOptions) -> CaseSet[UmniCase]:
        file = path / "cases.jsonl" if path.is_dir() else path
        return CaseSet(path=file, cases=read_jsonl(file, UmniCase))

    def case_id(self, case: UmniCase) -> str:
        return case.id

    def build(self, case: UmniCase, options: UmniOptions) -> Graph[UmniHandles]:
        g: Graph[UmniHandles] = Graph(case.id)
        stages: dict[str, StageHandles] = {}
        image: Ref | None = None
        for stage in STAGES:
            spec = case.stage(stage)
            if image is None:
                image = g.generate(f"{stage}/image", [spec.instruction])
            else:
                image = g.edit(f"{stage}/image", image, spec.instruction)
            answers: dict[str, Ref] = {q.id: g.answer(f"{stage}/{q.id}", [image, q.text], q.options) for q in spec.questions}
            stages[stage] = StageHandles(image, answers)
        return g.with_handles(UmniHandles(stages))

    def record(self, case: UmniCase, outcomes: Mapping[str, Outcome], options: UmniOptions) -> UmniRecord:
        handles: UmniHandles = self.handles(case, outcomes, options)
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

    def summarize(self, records: list[UmniRecord], options: UmniOptions) -> scoring.UmniScores:
        return scoring.score(records, options.ability)

    def tallies(self, record: UmniRecord, options: UmniOptions) -> dict[str, int]:
        return scoring.case_tallies(record, options.ability)

    def score_tallies(self, totals: Mapping[str, int], options: UmniOptions) -> scoring.UmniScores:
        return scoring.score_tallies(totals, options.ability)

    def headline_parts(self, records: Sequence[UmniRecord], options: UmniOptions) -> HeadlineParts:
        return scoring.headline_parts(records, options.ability)

    def judgements(self, record: UmniRecord) -> dict[str, float | None]:
        """The per-case accuracy (0–100) over answered questions: what the paper correlates with people."""
        answered = [q["correct"] for q in record["questions"].values() if q["correct"] is not None]
        return {"accuracy": 100.0 * sum(answered) / len(answered) if answered else None}

    def case_score(self, record: UmniRecord) -> tuple[float, float] | None:
        """Questions answered right out of those answered (7/9); a failed question is counted apart."""
        answered = [q["correct"] for q in record["questions"].values() if q["correct"] is not None]
        return (float(sum(answered)), float(len(answered))) if answered else None

    def node_verdicts(self, record: UmniRecord) -> dict[str, bool | None]:
        """Each question's answer node (``<stage>/Q<n>``) and whether it chose the right option."""
        return {f"{q['stage']}/{qid}": q["correct"] for qid, q in record["questions"].items()}

    def tables(self, summary: dict[str, Any]) -> list[tuple[str, list[str], list[list[Any]]]]:
        s = summary["scores"]
        stage_rows = [[STAGE_TITLES[st], s["stages"][st]] + [s["questions"][q] for q in STAGE_QUESTIONS[st]] for st in STAGES]
        stage_rows.append(["Overall", s["overall"], None, None, None])
        question_rows = [[q, s["questions"][q], s["answered"][q], s["failed"][q]] for q in s["questions"]]
        domain_rows = [[d, v, s.get("domain_answered", {}).get(d), s.get("domain_failed", {}).get(d)] for d, v in s["domains"].items()]
        return [
            (f"Accuracy by stage (ability: {summary['options']['ability']})", ["Stage", "Score", "Q a", "Q b", "Q c"], stage_rows),
            ("Accuracy by question", ["Question", "Accuracy", "Answered", "Failed"], question_rows),
            ("Accuracy by domain", ["Domain", "Accuracy", "Answered", "Failed"], domain_rows),
        ]

    def views(self, record: UmniRecord) -> list[View]:
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


PROTOCOL = UmniBench()
