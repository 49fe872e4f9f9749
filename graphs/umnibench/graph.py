"""The UmniBench graph: generate → answer Q1–Q3 → edit → answer Q4–Q6 → edit → answer Q7–Q9.

Each stage's image is the next stage's input, so errors accumulate across stages as in the paper.
Single-ability modes are bindings (the ability under test from the model, the others from fixed
modules) plus ``--option ability=...``, which only changes what is scored.
"""

from __future__ import annotations

from dataclasses import dataclass

from umni.plugin import Graph, Ref

from .cases import STAGES, UmniCase


@dataclass(frozen=True)
class StageHandles:
    """One stage's image node and its questions' answer nodes (by question id)."""

    image: Ref
    answers: dict[str, Ref]


@dataclass(frozen=True)
class UmniHandles:
    stages: dict[str, StageHandles]


def build_case_graph(case: UmniCase) -> Graph[UmniHandles]:
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
