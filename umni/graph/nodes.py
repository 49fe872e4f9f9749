"""The parts of a graph: nodes, the `Ref`s that wire one node's output into another, and the case
files (`ImageFile`) a node reads. Plain data, so a graph can be built, checked and hashed without
the engine that runs it."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from umni.backends import roles as R
from umni.util.codeid import code_fingerprint
from umni.util.policy import CachePolicy, RetryPolicy

NodeKind = Literal["generate", "edit", "answer", "respond", "judge", "tool", "compute"]

#: Which role each model-calling node kind uses by default.
DEFAULT_ROLE: dict[str, str] = {
    "generate": R.GENERATE,
    "edit": R.EDIT,
    "answer": R.UNDERSTAND,
    "respond": R.UNDERSTAND,
    "judge": R.JUDGE,
}


#: What a node's output is when another node reads it: an image, text, or a value (a parsed
#: judgement, an answer, a tool or compute result). "any" is a `Ref` made by hand; the graph then
#: looks the type up from the node it names.
OutputType = Literal["image", "text", "value", "any"]


@dataclass(frozen=True)
class Ref:
    """The output of another node of the same graph, used as an input.

    `optional` inputs receive None when that node was skipped or failed, instead of blocking.
    `type` is what the node produces (builder methods fill it in); `Graph.validate` checks each
    Ref against the slot it is passed to, so a text given as an edit's image is refused before
    any call. It is a description, not an identity: two Refs to one node compare equal.
    """

    node: str
    optional: bool = False
    type: OutputType = field(default="any", compare=False)

    def maybe(self) -> Ref:
        return Ref(self.node, optional=True, type=self.type)


@dataclass(frozen=True)
class ImageFile:
    """An image given by the case (a file on disk), stored by content when the node runs."""

    path: Path


#: A prompt part: literal text, an image file from the case, or another node's output
#: (an image, or text such as a plan or a critique).
PromptPart = str | ImageFile | Ref


@dataclass
class Node:
    """One step. Only `params`, the code of `fn`/`parse`, the inputs' contents, the role's backend
    identity, the seed and `repeat` enter the cache key (see umni.keys).

    `when` decides from the node's input and `gate` values whether the node runs at all (False:
    skipped); it is control flow, not part of what is computed, so neither it nor the `gate`
    inputs it reads are hashed. `gate` inputs are dependencies only: they are never passed to
    `fn` or placed in a prompt.
    """

    id: str
    kind: NodeKind
    role: str | None = None
    prompt: tuple[PromptPart, ...] = ()
    images: tuple[ImageFile | Ref, ...] = ()
    inputs: dict[str, Ref] = field(default_factory=dict)
    gate: dict[str, Ref] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    fn: Callable[..., Any] | None = None
    parse: Callable[[str], Any] | None = None
    when: Callable[..., bool] | None = None
    version: str = "1"
    repeat: int = 0
    #: How this node's calls are retried (None: the run's policy) and whether it uses the cache
    #: (None: its kind's default); data about how, not what, so neither enters the key.
    retry: RetryPolicy | None = None
    cache: CachePolicy | None = None

    def refs(self) -> list[Ref]:
        found = [p for p in self.prompt if isinstance(p, Ref)]
        found += [p for p in self.images if isinstance(p, Ref)]
        found += list(self.inputs.values())
        found += list(self.gate.values())
        return found

    def upstream(self) -> set[str]:
        return {r.node for r in self.refs()}

    def code_identity(self, case_id: str = "?") -> dict[str, str]:
        """Fingerprints of the code that computes this node's output (`fn`, `parse`), for its key.

        Taken afresh at every call, because the code's globals, closure cells and defaults may have
        changed since the last one (a re-run of the same graph after a global changed must not reuse
        the old key); `code_fingerprint` keeps that cheap by memoising what cannot change (parsed
        source per code object) and the digest per description. Raises ConfigError naming the node
        when a callable cannot be fingerprinted. `when` is checked the same way but is not part of
        the identity (a gate)."""
        if self.fn is None and self.parse is None and self.when is None:
            return {}  # a model node: no code of ours decides its output
        where = f"case '{case_id}', node '{self.id}'"
        identity = {}
        if self.fn is not None:
            identity["fn"] = code_fingerprint(self.fn, what=f"{where}: compute function")
        if self.parse is not None:
            identity["parse"] = code_fingerprint(self.parse, what=f"{where}: judge parse function")
        if self.when is not None:
            code_fingerprint(self.when, what=f"{where}: `when` condition")
        return identity


def _parts(prompt: str | PromptPart | Sequence[PromptPart]) -> tuple[PromptPart, ...]:
    if isinstance(prompt, (str, Ref, ImageFile)):
        return (prompt,)
    return tuple(prompt)


def _callable_name(fn: Callable[..., Any]) -> str:
    """A callable's name as a node parameter (it enters the key): the function's qualified name;
    for a partial, the function it wraps; for a callable object, its class. Never its repr, which
    holds a memory address and so never matched across processes (the code fingerprint covers the
    bound arguments and the object's state)."""
    if isinstance(fn, functools.partial):
        return f"partial({_callable_name(fn.func)})"
    qualname = getattr(fn, "__qualname__", None)
    if isinstance(qualname, str):
        return f"{getattr(fn, '__module__', '?')}.{qualname}"
    return f"{type(fn).__module__}.{type(fn).__qualname__}()"
