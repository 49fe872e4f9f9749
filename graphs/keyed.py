"""Node functions that keep the name their cache keys were made under.

A compute function's or judge parser's module and qualified name are a parameter of its nodes
(``fn`` / ``parser``), so they enter every cache key of those nodes beside the function's code
(umni's code fingerprint: parsed source, closure values, the globals it reads). Moving such a
function to another module, or out of a class, would make every result cached for it miss although
nothing it computes changed. `keyed_as` gives a moved function back the name it was keyed under.

It is called after the function's definition, never as a decorator: a decorator is part of the
function's source, and so of its code fingerprint. A class whose instances a node function closes
over (a case model, say) enters the fingerprint by its module and name too, and is kept the same way.
"""

from __future__ import annotations

from typing import Any, TypeVar, cast

T = TypeVar("T")


def keyed_as(target: T, module: str, qualname: str | None = None) -> T:
    """`target` (a function or class) named `module`.`qualname` (its own qualname when None), as
    its cache keys have it; returns `target`."""
    named = cast(Any, target)  # a function or a class: both carry the two names
    named.__module__ = module
    if qualname is not None:
        named.__qualname__ = qualname
    return target
