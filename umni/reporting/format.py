"""How a number reads in every table umni writes (reports, leaderboards, the runs listing), kept in
one place so they all print a score the same way."""

from __future__ import annotations

from typing import Any


def format_cell(value: Any) -> str:
    """Table cells as the papers print them: scores to two decimals, missing values as a dash."""
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)
