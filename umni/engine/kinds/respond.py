"""``respond``: free text (a plan, a rewrite, a critique)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel

from umni.backends import roles as R
from umni.engine.kinds import register
from umni.engine.kinds.base import Kind, KindContext
from umni.graph.graph import OutputType
from umni.graph.params import TextParams


class TextOutput(BaseModel):
    text: str


class Respond(Kind):
    name = "respond"
    default_role = R.UNDERSTAND
    output: ClassVar[OutputType] = "text"
    Output = TextOutput
    Params = TextParams

    async def execute(self, ctx: KindContext) -> TextOutput:
        parts = ctx.parts()
        max_tokens = TextParams.of(ctx.node).max_tokens_or(512)
        backend = ctx.backend
        reply = await ctx.call(lambda: R.respond_with(backend, parts, ctx.node.params, max_tokens=max_tokens, seed=ctx.seed()))
        return TextOutput(text=reply.text)


register(Respond())
