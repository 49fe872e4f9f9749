"""Node kinds, one module each: generate, edit, answer, respond, judge, tool, compute.

A kind is both what a graph knows of a node (its output type, default role and checks, registered in
`umni.graph.registry`) and how the engine runs one (`Kind.execute`). Every module registers its kind
when imported. umni's own kinds, like a plugin's, are named in the ``umni.kinds`` entry-point group
(pyproject.toml), which the registry loads the first time a kind is looked up. Tool roles (ocr,
detect, embed) are registered the same way in `umni.engine.kinds.tools`.
"""

from __future__ import annotations

from umni.engine.kinds.base import Kind, KindContext, RunStats, Services
from umni.graph import registry

__all__ = ["Kind", "KindContext", "RunStats", "Services", "find_kind", "get_kind", "known_kinds", "register"]


def register(kind: Kind) -> Kind:
    """Make `kind` available to graphs under `kind.name` (a second kind of that name is refused)."""
    registry.register(kind)
    return kind


def find_kind(name: str) -> Kind | None:
    """The kind named `name`, or None (also when the name belongs to something that cannot run)."""
    kind = registry.find_kind(name)
    return kind if isinstance(kind, Kind) else None


def get_kind(name: str) -> Kind:
    kind = find_kind(name)
    if kind is None:
        raise KeyError(f"unknown node kind '{name}' (known: {', '.join(known_kinds())})")
    return kind


def known_kinds() -> list[str]:
    return registry.known_kinds()
