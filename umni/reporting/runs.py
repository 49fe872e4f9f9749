"""What `umni runs` and `umni protocols --options` print: run directories at a glance, and each
protocol's options with their defaults."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel

from umni.reporting.format import format_cell
from umni.reporting.leaderboard import run_coverage, run_label, summary_label
from umni.store.completion import is_complete
from umni.store.runfolder import RUN_JSON, RunFolder, run_folders
from umni.util.errors import InputError


@dataclass
class RunInfo:
    path: Path
    protocol: str
    label: str
    date: datetime
    overall: Any
    answered: int | None
    total: int | None
    state: str


def _info(path: Path) -> RunInfo:
    folder = RunFolder(path)
    if folder.summary_json.exists() and is_complete(path):
        summary = folder.read_summary()
        cell, _ = run_coverage(summary)
        stamp = folder.summary_json.stat().st_mtime
        return RunInfo(path, summary.protocol, summary_label(summary), datetime.fromtimestamp(stamp, UTC),
                       summary.scores.get("overall"), cell.answered, cell.total, "done")
    manifest = folder.read_manifest()
    stamp = folder.run_json.stat().st_mtime
    return RunInfo(path, manifest.protocol, run_label(manifest.bindings), datetime.fromtimestamp(stamp, UTC),
                   None, None, None, "unfinished" if is_complete(path) else "incomplete")


def find_run_dirs(paths: Iterable[Path]) -> list[RunInfo]:
    """Run directories (those holding run.json) under `paths`, newest first."""
    found: list[RunInfo] = []
    for root in paths:
        root = Path(root)
        if not root.exists():
            raise InputError("no such folder", path=root)
        for folder in run_folders(root, RUN_JSON):
            try:
                found.append(_info(folder))
            except (InputError, OSError):
                continue  # a damaged directory is not a run to list
    return sorted(found, key=lambda r: r.date, reverse=True)


def format_runs(runs: list[RunInfo]) -> str:
    if not runs:
        return "no run directories found"
    rows = [["date (UTC)", "protocol", "overall", "coverage", "bindings", "directory"]]
    for r in runs:
        coverage = "" if r.total is None else f"{r.answered}/{r.total}" + ("*" if r.answered is not None and r.answered < r.total else "")
        overall = format_cell(r.overall) if r.state == "done" else f"({r.state})"
        rows.append([r.date.strftime("%Y-%m-%d %H:%M"), r.protocol, overall, coverage, r.label, str(r.path)])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[-1] for row in rows]
    if any(r.total is not None and r.answered is not None and r.answered < r.total for r in runs):
        lines.append("* score computed on incomplete coverage (answered/total nodes)")
    return "\n".join(lines)


def option_lines(options: type[BaseModel]) -> list[str]:
    """`--option KEY=VALUE` lines for a protocol's options model: key, type, default, description."""
    lines = []
    for name, info in options.model_fields.items():
        default = info.get_default(call_default_factory=True)
        if isinstance(default, Enum):
            default = default.value
        text = f"--option {name}={_kind(info.annotation)}  (default: {default!r})"
        if info.description:
            text += f"  {info.description}"
        lines.append(text)
    return lines or ["(no options)"]


def _kind(annotation: Any) -> str:
    """The accepted values: `a|b|c` for choices, else the type's name (`int`, `bool`, `str`)."""
    origin = get_origin(annotation)
    if origin is Literal:
        return "|".join(str(a) for a in get_args(annotation))
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return "|".join(str(m.value) for m in annotation)
    if origin is Union or str(origin) == "types.UnionType":
        return "|".join(_kind(a) for a in get_args(annotation) if a is not type(None)) + " (optional)"
    return getattr(annotation, "__name__", str(annotation))
