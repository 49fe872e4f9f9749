"""The ``--option`` fields of an AEGIS run: the paper's variants (which prompt, a plan first, a
rewritten prompt, interleaved drawing)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from umni.plugin import JUDGE, ROLE_INTERFACE, UNDERSTAND, Understander

#: Roles whose backends promise free-text replies, so they can write a plan or a rewrite.
TEXT_ROLES = tuple(role for role, interface in ROLE_INTERFACE.items() if interface is Understander)


class AegisOptions(BaseModel):
    """Variants of the paper (``--option key=value``)."""

    model_config = ConfigDict(extra="forbid")

    prompt: Literal["prompt", "clear_prompt"] = Field("prompt", description="which instruction the model is given")
    reasoning: Literal["none", "plugin"] = Field("none", description="plugin: a reasoning node writes a plan first")
    reasoning_role: str = Field(UNDERSTAND, description="role that writes the plan (reasoning=plugin)")
    rewrite: Literal["none", "self", "cross"] = Field("none", description="rewrite the prompt into a clear one first")
    rewrite_role: str = Field(JUDGE, description="role that rewrites (rewrite=cross)")
    condition_on_previous: bool = Field(False, description="interleaved: each drawn image also sees the earlier ones")
    max_images: int = Field(6, ge=1, le=16, description="interleaved: most <image> markers drawn per answer")
    invert_negative: bool = Field(False, description="count Y on negatively phrased items as a fail (not the official score)")

    @model_validator(mode="after")
    def _coherent(self) -> AegisOptions:
        for name in ("reasoning_role", "rewrite_role"):
            if getattr(self, name) not in TEXT_ROLES:
                raise ValueError(f"{name} must be a role that writes text ({', '.join(TEXT_ROLES)}), got {getattr(self, name)!r}")
        if "reasoning_role" in self.model_fields_set and self.reasoning != "plugin":
            raise ValueError("reasoning_role applies only with reasoning=plugin")
        if "rewrite_role" in self.model_fields_set and self.rewrite != "cross":
            raise ValueError("rewrite_role applies only with rewrite=cross (self-rewrite uses the understand role)")
        if self.rewrite != "none" and self.prompt != "prompt":
            raise ValueError("rewrite starts from the reasoning prompt; it cannot be combined with prompt=clear_prompt")
        if self.rewrite != "none" and self.reasoning != "none":
            raise ValueError("choose one of rewrite and reasoning=plugin; the paper studies them apart")
        return self
