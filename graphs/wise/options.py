"""The ``--option`` fields of a WISE run: the rubric, the prompt set, the rewrite ablation and how
the judge is asked."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .cases import Variant


class WiseOptions(BaseModel):
    """WISE variants (``--option key=value``)."""

    model_config = ConfigDict(extra="forbid")

    scoring: Variant = Field("verified", description="legacy: 0-2 marks and WiScore; verified: binary Score")
    set: Variant | None = Field(None, description="prompt set (ids, categories, weights); default: the scoring's own")
    rewrite: bool = Field(False, description="legacy set only: generate from the *_rewrite.json explicit prompts")
    judge_thinking: Literal["off", "server"] | None = Field(
        None,
        description="off: turn the judge's thinking off through chat_template_kwargs (as the verified script does; "
        "vLLM/SGLang); server: send nothing (hosted APIs that refuse the field); default: off for verified "
        "scoring, server for legacy (whose script called a hosted API)",
    )

    judge_prompt: Path | None = Field(
        None,
        description="a YAML file with 'user' (holding {prompt} and {explanation}) and optional 'system': ask the "
        "judge with this text (the authors' own protocol, say) instead of umni's wording",
    )

    @model_validator(mode="after")
    def _resolve_set(self) -> WiseOptions:
        """Fill in the set so run.json, summaries and leaderboards name it explicitly."""
        if self.set is None:
            self.set = self.scoring
        if self.judge_thinking is None:
            self.judge_thinking = "off" if self.scoring == "verified" else "server"
        if self.rewrite and self.set != "legacy":
            raise ValueError(
                "rewrite=true uses the legacy set's *_rewrite.json prompts; add set=legacy (or scoring=legacy)"
            )
        return self

    @property
    def prompt_set(self) -> Variant:
        assert self.set is not None
        return self.set
