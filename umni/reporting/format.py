"""How a number reads in every table umni writes (reports, leaderboards, the runs listing), kept in
one place so they all print a score the same way."""

from __future__ import annotations


def format_cell(value: object, decimals: int = 2) -> str:
    """Table cells as the papers print them: scores to two decimals (or the `decimals` a paper's
    table uses, e.g. GIR-Bench's three), missing values as a dash."""
    if value is None:
        return "—"
    if isinstance(value, bool):  # a yes/no column (GENIUS's Interleaved), as the papers tick it
        return "✓" if value else "✗"
    if isinstance(value, float):
        return f"{value:.{decimals}f}"
    return str(value)
