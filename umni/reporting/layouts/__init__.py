"""Each protocol's leaderboard tables in two layouts: ``paper`` (the paper's own tables:
orientation, column groups, names, order and rounding) and ``tidy`` (one row per run, the shape of
the long CSV). A protocol without a layout here gets its scalar scores flattened into one table."""

from __future__ import annotations

from umni.reporting.layouts import aegis, generic, genius, girbench, umnibench, wise
from umni.reporting.layouts.common import Layout

LAYOUT_NAMES = ("paper", "tidy")

#: protocol -> layout name -> the function that builds its tables
LAYOUTS: dict[str, dict[str, Layout]] = {
    "umnibench": {"paper": umnibench.paper, "tidy": umnibench.tidy},
    "genius": {"paper": genius.paper, "tidy": genius.tidy},
    "aegis": {"paper": aegis.paper, "tidy": aegis.tidy},
    "wise": {"paper": wise.table, "tidy": wise.table},
    "girbench": {"paper": girbench.paper, "tidy": girbench.tidy},
}


def layout_for(protocol: str, layout: str) -> Layout:
    """The function building `protocol`'s tables in `layout` (``paper`` or ``tidy``)."""
    if layout not in LAYOUT_NAMES:
        raise ValueError(f"unknown layout {layout!r}; known: {', '.join(LAYOUT_NAMES)}")
    return LAYOUTS.get(protocol, {}).get(layout, generic.table)


__all__ = ["LAYOUTS", "LAYOUT_NAMES", "Layout", "layout_for"]
