"""Node kinds, one module each: generate, edit, answer, respond, judge, tool, compute.

Every module registers its kind when imported; the built-in modules are imported the first time a
kind is looked up. Adding a kind is one new module here (and its name in the import line of
`_load`: modules are imported by name, never discovered and imported dynamically), or, from another
package, a module named in that package's ``umni.kinds`` entry-point group. Tool roles (ocr,
detect, embed) are registered the same way in `umni.kinds.tools`.
"""

from __future__ import annotations

from importlib.metadata import entry_points

from .base import Kind, KindContext, RunStats, Services

__all__ = ["Kind", "KindContext", "RunStats", "Services", "find_kind", "get_kind", "known_kinds", "register"]

_KINDS: dict[str, Kind] = {}
_loaded = False


def register(kind: Kind) -> Kind:
    """Make `kind` available to graphs under `kind.name` (a second kind of that name is refused)."""
    existing = _KINDS.get(kind.name)
    if existing is not None and type(existing) is not type(kind):
        raise ValueError(f"node kind '{kind.name}' is already registered by {type(existing).__qualname__}")
    _KINDS[kind.name] = kind
    return kind


def _load() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    from . import answer, compute, edit, generate, judge, respond, tool  # noqa: F401  (each registers itself)

    for ep in entry_points(group="umni.kinds"):
        ep.load()


def find_kind(name: str) -> Kind | None:
    """The kind named `name`, or None."""
    kind = _KINDS.get(name)
    if kind is None and not _loaded:
        _load()
        kind = _KINDS.get(name)
    return kind


def get_kind(name: str) -> Kind:
    kind = find_kind(name)
    if kind is None:
        raise KeyError(f"unknown node kind '{name}' (known: {', '.join(known_kinds())})")
    return kind


def known_kinds() -> list[str]:
    _load()
    return sorted(_KINDS)
