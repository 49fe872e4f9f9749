"""UmniBench case schema and loader.

The official UmniBench data is not public, so umni defines the case format: one JSON object per
line (JSONL). Each case has three stages; each stage has one instruction (the generation prompt for
stage 1, an edit instruction for stages 2 and 3) and three multiple-choice questions about the image
that stage produces. `umni cases schema umnibench` prints the JSON Schema.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from umni.plugin import CaseSet, read_jsonl

Domain = Literal[
    "Spatial",
    "Plant",
    "Fluid",
    "Physical",
    "Cooking",
    "Arts and Crafts",
    "Weather & Environment",
    "Animal",
    "Office",
    "Personal Care",
    "Playground",
    "Gardening",
    "Household",
]
#: The paper's 13 domains, in its order.
DOMAINS: tuple[str, ...] = get_args(Domain)
STAGES = ("generation", "interaction", "counterfactual")
#: Question ids asked after each stage, in order.
STAGE_QUESTIONS = {"generation": ("Q1", "Q2", "Q3"), "interaction": ("Q4", "Q5", "Q6"), "counterfactual": ("Q7", "Q8", "Q9")}
STAGE_TITLES = {"generation": "Stage 1 · generation", "interaction": "Stage 2 · interaction", "counterfactual": "Stage 3 · counterfactual"}


class Question(BaseModel):
    """A multiple-choice question about one stage's image; `answer` is one of `options`, verbatim."""

    model_config = ConfigDict(extra="forbid")

    id: Literal["Q1", "Q2", "Q3", "Q4", "Q5", "Q6", "Q7", "Q8", "Q9"]
    text: str = Field(min_length=1, max_length=2000)
    options: list[str] = Field(min_length=2, max_length=8)
    answer: str

    @field_validator("options")
    @classmethod
    def _distinct(cls, options: list[str]) -> list[str]:
        if any(not o.strip() for o in options):
            raise ValueError("options must not be empty")
        if len({o.strip().lower() for o in options}) != len(options):
            raise ValueError("options must be distinct")
        return options

    @model_validator(mode="after")
    def _answer_is_an_option(self) -> Question:
        if self.answer not in self.options:
            raise ValueError(f"answer {self.answer!r} is not one of the options {self.options}")
        return self

    @property
    def answer_index(self) -> int:
        return self.options.index(self.answer)


class Stage(BaseModel):
    """One stage: the instruction given to the model and the three questions about its result."""

    model_config = ConfigDict(extra="forbid")

    instruction: str = Field(min_length=1, max_length=4000)
    entities: list[str] = Field(min_length=2, max_length=2, description="the two entities the stage's image shows")
    questions: list[Question] = Field(min_length=3, max_length=3)


class UmniCase(BaseModel):
    """One UmniBench case: generate, edit (interaction), edit (counterfactual); nine questions."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_.\-]+$")
    domain: Domain
    concept: str = Field(min_length=1, max_length=200)
    generation: Stage
    interaction: Stage
    counterfactual: Stage

    @model_validator(mode="after")
    def _question_ids_match_stages(self) -> UmniCase:
        for stage in STAGES:
            got = tuple(q.id for q in getattr(self, stage).questions)
            if got != STAGE_QUESTIONS[stage]:
                raise ValueError(f"stage '{stage}' must ask {', '.join(STAGE_QUESTIONS[stage])} in order, got {', '.join(got)}")
        before, after = set(self.interaction.entities), set(self.counterfactual.entities)
        if len(before ^ after) != 2:
            raise ValueError(
                "the counterfactual stage must replace exactly one entity of the interaction stage "
                f"(interaction: {self.interaction.entities}, counterfactual: {self.counterfactual.entities})"
            )
        return self

    def stage(self, name: str) -> Stage:
        return getattr(self, name)


def load_cases(path: Path) -> CaseSet[UmniCase]:
    """The cases of a ``cases.jsonl`` file, or of the one in the folder `path`."""
    file = path / "cases.jsonl" if path.is_dir() else path
    return CaseSet(path=file, cases=read_jsonl(file, UmniCase))
