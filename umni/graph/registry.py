"""The node kinds a graph may hold, as data: each kind registers an object here that says what its
nodes output, which role they use by default and how to check one. Building and validating a graph
needs only this; running a node is the engine's business (`umni.engine.kinds`).

Kinds reach the registry through the ``umni.kinds`` entry-point group, umni's own kinds included
(pyproject.toml names them), so the graph layer never imports the engine that implements them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar, Protocol

from umni.graph.nodes import Node, OutputType, Ref
from umni.util.entrypoints import entry_points, load_entry_point
from umni.util.errors import ConfigError

#: A Ref passed to a slot of a node, and the output types that slot accepts.
Slot = tuple[str, Ref, tuple[OutputType, ...]]


class NodeShape(Protocol):
    """What a graph needs to know of a node kind (the engine's `Kind` implements it)."""

    name: ClassVar[str]
    default_role: ClassVar[str | None]

    def output_type(self, node: Node) -> OutputType: ...

    def check(self, node: Node, where: str) -> None: ...

    def slots(self, node: Node) -> Iterable[Slot]: ...


#: umni's own kinds, which its package metadata must name
BUILT_IN = frozenset({"generate", "edit", "answer", "respond", "judge", "tool", "compute"})

_KINDS: dict[str, NodeShape] = {}
_loaded = False


def register(kind: NodeShape) -> NodeShape:
    """Make `kind` available to graphs under `kind.name` (a second kind of that name is refused)."""
    existing = _KINDS.get(kind.name)
    if existing is not None and type(existing) is not type(kind):
        raise ValueError(f"node kind '{kind.name}' is already registered by {type(existing).__qualname__}")
    _KINDS[kind.name] = kind
    return kind


def _load() -> None:
    global _loaded
    if not _loaded:
        found = entry_points(group="umni.kinds")
        if BUILT_IN - set(found.names):  # said on every look-up until fixed, never a silent "unknown kind"
            raise ConfigError(
                "umni's node kinds are missing from its installed metadata (an install older than this "
                "checkout?): reinstall umni, e.g. pip install -e ."
            )
        _loaded = True
        for ep in found:
            load_entry_point(ep)


def find_kind(name: str) -> NodeShape | None:
    """The kind named `name`, or None."""
    kind = _KINDS.get(name)
    if kind is None and not _loaded:
        _load()
        kind = _KINDS.get(name)
    return kind


def known_kinds() -> list[str]:
    _load()
    return sorted(_KINDS)
