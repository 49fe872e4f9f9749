"""``judge``: a verdict, the reply parsed by the node's `parse`; out-of-format replies are asked
again a bounded number of times (the retry policy's `parse_retries`), then recorded as failures."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from pydantic import BaseModel

from umni.backends import roles as R
from umni.engine.kinds import register
from umni.engine.kinds.base import Kind, KindContext
from umni.graph.graph import Node
from umni.graph.params import JudgeParams
from umni.store.hashing import fingerprint
from umni.util.errors import ConfigError, InvalidAnswer, OutputFailure, ParseFailure


class JudgeOutput(BaseModel):
    text: str
    value: Any
    parse_attempts: int


class Judge(Kind):
    name = "judge"
    default_role = R.JUDGE
    Output = JudgeOutput
    Params = JudgeParams

    def check(self, node: Node, where: str) -> None:
        super().check(node, where)
        if node.parse is None:
            raise ConfigError(f"{where}: judge node has no parse function")

    async def execute(self, ctx: KindContext) -> JudgeOutput:
        node = ctx.node
        assert node.parse is not None
        parts = ctx.parts()
        max_tokens = JudgeParams.of(node).max_tokens_or(1024)
        backend = ctx.backend
        last: OutputFailure | None = None
        for parse_try in range(1 + ctx.retry.parse_retries):
            seed = ctx.seed(parse_try)
            reply = await ctx.call(partial(R.respond_with, backend, parts, node.params, max_tokens=max_tokens, seed=seed))
            try:
                value = node.parse(reply.text)
            except (ParseFailure, InvalidAnswer) as exc:  # out of format or out of range: ask again, boundedly
                last = type(exc)(str(exc), raw=reply.text)
                ctx.emit("node.unparsed", attempt=parse_try + 1, error=str(exc))
                continue
            return JudgeOutput(text=reply.text, value=value, parse_attempts=parse_try + 1)
        assert last is not None
        raise last

    def fingerprint(self, output: Mapping[str, Any]) -> str:
        """A verdict counts by its parsed value only: the same verdict in other words (or after
        another number of parse attempts) is the same input downstream."""
        return fingerprint({"judge_value": output.get("value")})


register(Judge())
