"""``answer``: a multiple-choice answer, the chosen option's index checked against the options."""

from __future__ import annotations

from pydantic import BaseModel

from umni.backends import roles as R
from umni.engine.kinds import register
from umni.engine.kinds.base import Kind, KindContext
from umni.graph.params import AnswerParams
from umni.util.errors import InvalidAnswer


class AnswerOutput(BaseModel):
    index: int
    option: str
    text: str
    mode: str


class Answer(Kind):
    name = "answer"
    default_role = R.UNDERSTAND
    Output = AnswerOutput
    Params = AnswerParams

    async def execute(self, ctx: KindContext) -> AnswerOutput:
        options = AnswerParams.of(ctx.node).options
        parts = ctx.parts()
        backend = ctx.backend
        reply = await ctx.call(lambda: backend.choose(parts, options, seed=ctx.seed()))
        if reply.index is None or not 0 <= reply.index < len(options):
            raise InvalidAnswer(f"the answer names no valid option (of {len(options)})", raw=reply.text)
        return AnswerOutput(index=reply.index, option=options[reply.index], text=reply.text, mode=reply.mode)


register(Answer())
