"""The ``--option`` fields of an UmniBench run."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class UmniOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ability: Literal["full", "understanding", "generation", "editing"] = Field(
        default="full",
        description="the ability under test (bind the other roles to fixed modules); only changes what is scored: "
        "editing scores the interaction and counterfactual stages, the others all three",
    )
