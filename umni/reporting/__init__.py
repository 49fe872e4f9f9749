"""What a finished run shows: the HTML report, leaderboards across runs and sweeps, judge agreement
with human labels, the runs listing, cost estimates, the local web viewer, and the one place a
number is formatted for a table.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from umni.reporting.agreement import compare, compare_human, parse_scale, read_human, run_judgements
    from umni.reporting.caseindex import write_viewer_files
    from umni.reporting.format import format_cell
    from umni.reporting.leaderboard import (
        Run,
        bootstrap_headline,
        build_tables,
        coverage_line,
        failure_share,
        find_runs,
        run_coverage,
        write_leaderboard,
    )
    from umni.reporting.pricing import Price, default_price_file, estimate, load_prices
    from umni.reporting.report import write_report
    from umni.reporting.runs import find_run_dirs, format_runs, option_lines
    from umni.reporting.sweep_report import write_sweep_report
    from umni.reporting.tables import LONG_HEADER, Cell, Row, Table
    from umni.reporting.viewer import ViewerData, case_status, make_server, serve

#: Where each public name lives. Imported on first use, so `umni view` does not wait for SciPy
#: (judge agreement) or Jinja (the report) before it can print its URL.
_HOMES = {
    "compare": "agreement", "compare_human": "agreement", "parse_scale": "agreement", "read_human": "agreement",
    "run_judgements": "agreement", "write_viewer_files": "caseindex", "format_cell": "format",
    "Run": "leaderboard", "bootstrap_headline": "leaderboard", "build_tables": "leaderboard", "coverage_line": "leaderboard",
    "failure_share": "leaderboard", "find_runs": "leaderboard", "run_coverage": "leaderboard", "write_leaderboard": "leaderboard",
    "Price": "pricing", "default_price_file": "pricing", "estimate": "pricing", "load_prices": "pricing",
    "write_report": "report", "find_run_dirs": "runs", "format_runs": "runs", "option_lines": "runs",
    "write_sweep_report": "sweep_report", "LONG_HEADER": "tables", "Cell": "tables", "Row": "tables", "Table": "tables",
    "ViewerData": "viewer", "case_status": "viewer", "make_server": "viewer", "serve": "viewer",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{home}"), name)


__all__ = [
    "bootstrap_headline",
    "build_tables",
    "case_status",
    "Cell",
    "compare",
    "compare_human",
    "coverage_line",
    "default_price_file",
    "estimate",
    "failure_share",
    "find_run_dirs",
    "find_runs",
    "format_cell",
    "format_runs",
    "load_prices",
    "LONG_HEADER",
    "make_server",
    "option_lines",
    "parse_scale",
    "Price",
    "read_human",
    "Row",
    "Run",
    "run_coverage",
    "run_judgements",
    "serve",
    "Table",
    "ViewerData",
    "write_leaderboard",
    "write_report",
    "write_sweep_report",
    "write_viewer_files",
]
