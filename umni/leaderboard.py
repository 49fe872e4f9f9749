"""Leaderboards: many runs' summaries side by side, in the papers' table layouts.

Each protocol's `scores` nest one level: scalar scores form the main table, each dict of scores
(stages, questions, domains, dimensions, tasks …) its own table. Runs of one protocol with
different options (UmniBench's single-ability modes, say) go in separate tables. Failure counts
stand beside the scores in the main table, so a high score with many failures is visible as such, and so does the pinned judge
of judged protocols.
"""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import InputError
from .report import format_cell


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[tuple[str, list[Any]]] = field(default_factory=list)

    def markdown(self) -> str:
        head = "| run | " + " | ".join(self.columns) + " |"
        rule = "|---" * (len(self.columns) + 1) + "|"
        body = ["| " + label + " | " + " | ".join(format_cell(v) for v in values) + " |" for label, values in self.rows]
        return "\n".join([f"### {self.title}", "", head, rule, *body])

    def to_json(self) -> dict[str, Any]:
        return {"title": self.title, "columns": self.columns, "rows": [{"run": l, "values": v} for l, v in self.rows]}




def run_label(summary: dict[str, Any]) -> str:
    """A short name for a run: its one spec, or role=spec pairs when roles differ."""
    bindings: dict[str, str] = summary.get("bindings", {})
    values = list(bindings.values())
    base = max(sorted(set(values)), key=values.count) if values else "?"
    overrides = [f"{role}={spec}" for role, spec in sorted(bindings.items()) if spec != base]
    label = base + (" + " + ", ".join(overrides) if overrides else "")
    lineage = summary.get("lineage", {}).get("judges")
    if lineage:
        label += f" (rejudged by {lineage['new']})"
    return label


def find_summaries(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """Summaries from run directories, or from folders holding run directories (a sweep)."""
    found: list[dict[str, Any]] = []
    for path in paths:
        path = Path(path)
        candidates = [path / "summary.json"] if (path / "summary.json").exists() else sorted(path.rglob("summary.json"))
        if not candidates:
            raise InputError("no summary.json found (not a run directory, nor a folder of runs)", path=path)
        for candidate in candidates:
            try:
                found.append(json.loads(candidate.read_text()))
            except json.JSONDecodeError as exc:
                raise InputError(f"invalid JSON ({exc.msg})", path=candidate) from None
    return found


def _flatten(value: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Scalar leaves of a nested score dict, keyed `outer/inner` (AEGIS task × domain group, say)."""
    flat: dict[str, Any] = {}
    for key, item in value.items():
        if isinstance(item, dict):
            flat.update(_flatten(item, f"{prefix}{key}/"))
        elif not isinstance(item, list):
            flat[f"{prefix}{key}"] = item
    return flat


def _option_tag(options: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(options.items()))


def build_tables(summaries: list[dict[str, Any]]) -> list[Table]:
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for summary in summaries:
        groups[(summary["protocol"], _option_tag(summary.get("options", {})))].append(summary)
    tables: list[Table] = []
    for (protocol, tag), members in sorted(groups.items()):
        prefix = f"{members[0].get('title', protocol)}" + (f" [{tag}]" if tag else "")
        main_cols: list[str] = []
        nested: dict[str, list[str]] = {}
        for s in members:
            for key, value in s["scores"].items():
                if isinstance(value, dict):
                    cols = nested.setdefault(key, [])
                    cols += [c for c in _flatten(value) if c not in cols]
                elif key == "judge" or isinstance(value, (int, float)) and not isinstance(value, bool) or value is None:
                    if key not in main_cols:
                        main_cols.append(key)
        failure_cols = ["cases", "failed nodes", "parse failures", "skipped cases"]
        main = Table(prefix, main_cols + failure_cols)
        for s in members:
            counts = s.get("counts", {})
            failures = s.get("failures", {})
            extra = [counts.get("cases"), sum(v for k, v in failures.items() if k != "blocked"), failures.get("parse", 0), counts.get("skipped_cases", 0)]
            main.rows.append((run_label(s), [s["scores"].get(c) for c in main_cols] + extra))
        tables.append(main)
        for key, cols in nested.items():
            table = Table(f"{prefix} · {key}", cols)
            for s in members:
                values = _flatten(s["scores"].get(key) or {})
                table.rows.append((run_label(s), [values.get(c) for c in cols]))
            tables.append(table)
    return tables


def write_leaderboard(tables: list[Table], out: Path) -> dict[str, Path]:
    """Write Markdown, CSV and JSON next to each other; return their paths."""
    out.mkdir(parents=True, exist_ok=True)
    md = out / "leaderboard.md"
    md.write_text("\n\n".join(t.markdown() for t in tables) + "\n")
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    for table in tables:
        writer.writerow(["table", "run", *table.columns])
        for label, values in table.rows:
            writer.writerow([table.title, label, *["" if v is None else v for v in values]])
        writer.writerow([])
    (out / "leaderboard.csv").write_text(buffer.getvalue())
    (out / "leaderboard.json").write_text(json.dumps([t.to_json() for t in tables], indent=2, ensure_ascii=False))
    return {"markdown": md, "csv": out / "leaderboard.csv", "json": out / "leaderboard.json"}
