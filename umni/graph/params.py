"""The node parameters the engine reads, typed: one pydantic model per kind of node.

A node's ``params`` stay the plain dict the builder methods fill in: that dict is what enters the
cache key (umni.engine.keys), so existing caches stay valid. What a kind reads from it is declared
here and read through the model (`AnswerParams.of(node)`), so a kind never guesses a type, and a
bad value (``max_tokens="many"``, labels that are not a list of strings) is refused when the graph
is validated, before any call, naming the case, the node and the field.

Parameters a model does not declare (a plugin kind's own, a protocol's marker) are allowed and
kept: they still enter the key, the engine just does not read them.
"""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, ConfigDict, ValidationError

from umni.graph.nodes import Node
from umni.util.errors import ConfigError


class NodeParams(BaseModel):
    """Base of a kind's parameter model: every field optional unless the kind cannot run without it."""

    model_config = ConfigDict(extra="allow", frozen=True)

    @classmethod
    def of(cls, node: Node, where: str | None = None) -> Self:
        """The node's parameters as this model; ConfigError naming `where` (or the node) and the field."""
        try:
            return cls.model_validate(node.params)
        except ValidationError as exc:
            problems = "; ".join(f"parameter {'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise ConfigError(f"{where or f'node {node.id!r}'}: {problems}") from None


class TextParams(NodeParams):
    """A text reply (``respond``, ``judge``): its length limit and how it is asked for
    (`umni.backends.roles.RequestOptions`: a system message, a temperature, extra body fields)."""

    max_tokens: int | None = None
    system: str | None = None
    temperature: float | None = None
    extra_body: dict[str, Any] | None = None

    def max_tokens_or(self, default: int) -> int:
        return default if self.max_tokens is None else self.max_tokens


class JudgeParams(TextParams):
    #: the parse function's qualified name (the builder sets it; its code is in the key)
    parser: str


class AnswerParams(NodeParams):
    #: the choices, in the order the model sees them; the answer is an index into them
    options: list[str]


class DetectParams(NodeParams):
    #: what the detector looks for
    labels: list[str]


class ComputeParams(NodeParams):
    #: the function's qualified name (the builder sets it; its code is in the key)
    fn: str
    #: fixed JSON arguments passed to the function beside its inputs
    const: dict[str, Any] = {}
