"""The ``--option`` fields of a GENIUS run, shared by the graph, the records and the summary."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .prompts import InputFormat


class GeniusOptions(BaseModel):
    """``--option`` fields. The defaults reproduce the official evaluation."""

    model_config = ConfigDict(extra="forbid")

    input_format: InputFormat = Field(InputFormat.INTERLEAVED, description="edit, interleaved or fine_grained")
    plan: bool = Field(False, description="pre-planning: the model writes a plan before generating")
    reflection_rounds: int = Field(0, ge=0, le=5, description="post-reflection: extra generate rounds after feedback")
    critic: Literal["judge", "self"] = Field("judge", description="who writes the reflection feedback")
    hints: Literal["none", "text", "multimodal"] = Field("none", description="hints appended to the generation input")
    vqa_probe: bool = Field(False, description="also ask the task as a multiple-choice question")
    judge_rounds: int = Field(3, ge=1, le=9, description="judge calls per metric; the item mark is round(mean)")
    copy_judge: bool = Field(True, description="ask the judge 'Copy: 0|1' besides the exact pixel check")
