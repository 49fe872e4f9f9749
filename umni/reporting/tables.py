"""A leaderboard table as data (cells that carry their coverage and interval, rows, titles and
notes) and its renderings: Markdown, LaTeX, CSV as laid out, the tidy long CSV (one row per run x metric) and JSON.

Most tables have one row per run. A paper that puts models in columns (UmniBench's question and
domain tables) is a `Table` with ``run_columns``: its columns are the runs, its rows the metrics,
and the runs' coverage and failures are rows of their own at the bottom."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from umni.reporting.format import format_cell


@dataclass
class Cell:
    """One score with what it was computed on: `answered` of `total` items, and a 95 % interval."""

    value: Any
    answered: int | None = None
    total: int | None = None
    ci: tuple[float, float] | None = None
    #: a coverage cell (no score of its own): printed as `answered/total`
    coverage_only: bool = False
    #: why a cell has no value, when the reader could not tell (printed beside the dash)
    reason: str | None = None
    #: decimals the paper's table prints this score with
    decimals: int = 2
    #: False where the metric does not apply (GENIUS's VC on multi-semantic cases): printed "–",
    #: never read as missing or incomplete
    applies: bool = True

    @property
    def incomplete(self) -> bool:
        return self.applies and self.answered is not None and self.total is not None and self.answered < self.total

    def text(self) -> str:
        if not self.applies:
            return NOT_APPLICABLE
        if self.value is None and self.ci is None and self.answered is not None and self.total is not None and self.coverage_only:
            return f"{self.answered}/{self.total}" + ("*" if self.incomplete else "")
        text = format_cell(self.value, self.decimals)
        if self.value is None and self.reason:
            text += f" ({self.reason})"
        if self.ci is not None:
            text += f" [{format_cell(self.ci[0], self.decimals)}, {format_cell(self.ci[1], self.decimals)}]"
        if self.answered is not None and self.total is not None:
            text += f" ({self.answered}/{self.total})"
        if self.incomplete and self.value is not None:
            text += "*"
        return text


#: What a cell whose metric does not apply prints (the papers' "-"); a missing score prints "—".
NOT_APPLICABLE = "–"


@dataclass
class Row:
    """One table row: a run's scores, or in a ``run_columns`` table one metric across the runs
    (``run`` empty, no coverage or failures of its own)."""

    run: str
    keys: list[str]
    cells: list[Cell]
    coverage: Cell | None
    failures: int | None


@dataclass
class Table:
    """A leaderboard table: key columns (run, maybe task), score columns, coverage and failures."""

    title: str
    protocol: str
    key_columns: list[str]
    columns: list[str]
    rows: list[Row] = field(default_factory=list)
    note: str = ""
    #: column groups over the score columns as the paper heads them: [name, how many columns]
    #: (a group named "" heads nothing: a column such as Overall that stands alone)
    groups: list[list[Any]] = field(default_factory=list)
    #: a second heading level above `groups`, same shape (GENIUS's three primitives)
    supergroups: list[list[Any]] = field(default_factory=list)
    #: the runs are the columns and the rows are metrics (as UmniBench's paper tables)
    run_columns: bool = False

    def _headers(self) -> list[str]:
        """Score column names, each prefixed by its group's name when the table has groups."""
        if not self.groups:
            return list(self.columns)
        owners = [name for name, span in self.groups for _ in range(int(span))]
        return [f"{owner} · {column}" if owner else column for owner, column in zip(owners, self.columns)] + self.columns[len(owners):]

    def _tail(self) -> list[str]:
        """The coverage and failures columns of a one-row-per-run table."""
        return [] if self.run_columns else ["coverage", "failures"]

    def _row_texts(self, row: Row, previous: Row | None) -> list[str]:
        keys = list(row.keys)
        if self.run_columns and previous is not None and keys and previous.keys and keys[0] == previous.keys[0]:
            keys[0] = ""  # a group's name once, on its first row, as the paper prints it
        tail = [] if self.run_columns else [row.coverage.text() if row.coverage else "", "" if row.failures is None else str(row.failures)]
        return [*keys, *(c.text() for c in row.cells), *tail]

    def markdown(self) -> str:
        """GitHub Markdown; always a valid table (escaped cells, a row even when no run has scores)."""
        header = [*self.key_columns, *self._headers(), *self._tail()]
        lines = [f"### {_md(self.title)}", "", "| " + " | ".join(_md(h) for h in header) + " |", "|" + "---|" * len(header)]
        for previous, row in zip([None, *self.rows], self.rows):
            lines.append("| " + " | ".join(_md(c) for c in self._row_texts(row, previous)) + " |")
        if not self.rows:
            lines.append("| " + " | ".join(["—"] * len(header)) + " |")
        notes = ["`*` computed on incomplete coverage (answered/total in brackets); [low, high] a 95 % bootstrap interval over cases"]
        if any(not c.applies for row in self.rows for c in row.cells):
            notes.append(f"`{NOT_APPLICABLE}` the metric does not apply (not a missing score)")
        if self.note:
            notes.insert(0, self.note)
        return "\n".join([*lines, "", *(_md(n, table=False) for n in notes)])

    def latex(self) -> str:
        """A booktabs tabular to paste into a paper: names left, numbers right, the interval and
        (answered/total) beside each score as in the Markdown, ``*`` for incomplete coverage."""
        header = [*self.key_columns, *self.columns, *self._tail()]
        spec = "l" * len(self.key_columns) + "r" * (len(header) - len(self.key_columns))
        lines = ["% " + _tex(self.title), "\\begin{tabular}{" + spec + "}", "\\toprule"]
        for level in (self.supergroups, self.groups):
            if not level:
                continue
            spans, rules, start = [""] * len(self.key_columns), [], len(self.key_columns) + 1
            for name, span in level:
                spans.append(f"\\multicolumn{{{span}}}{{c}}{{{_tex(name)}}}" if name else " & ".join([""] * int(span)))
                if name:
                    rules.append(f"\\cmidrule(lr){{{start}-{start + int(span) - 1}}}")
                start += int(span)
            spans += [""] * (len(header) - start + 1)
            lines += [" & ".join(spans) + " \\\\", " ".join(rules)]
        lines += [" & ".join(_tex(h) for h in header) + " \\\\", "\\midrule"]
        for previous, row in zip([None, *self.rows], self.rows):
            lines.append(" & ".join(_tex(c) for c in self._row_texts(row, previous)) + " \\\\")
        lines += ["\\bottomrule", "\\end{tabular}"]
        if self.note:
            lines.append("% " + _tex(self.note))
        return "\n".join(lines)

    def csv(self) -> str:
        """The table as laid out (one row per table row), values only: intervals and coverage in
        their own columns. The tidy one-row-per-metric CSV is `long_rows`."""
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow([f"# {self.title}"])
        head = list(self.key_columns)
        for column in self.columns:
            head += [column, f"{column} ci_low", f"{column} ci_high", f"{column} answered", f"{column} total"]
        writer.writerow(head + ([] if self.run_columns else ["coverage answered", "coverage total", "failures"]))
        for row in self.rows:
            values: list[Any] = list(row.keys)
            for c in row.cells:
                value = NOT_APPLICABLE if not c.applies else _csv(c.value)
                values += [value, _csv(c.ci[0] if c.ci else None), _csv(c.ci[1] if c.ci else None), _csv(c.answered), _csv(c.total)]
            if not self.run_columns:
                values += [_csv(row.coverage.answered if row.coverage else None), _csv(row.coverage.total if row.coverage else None), _csv(row.failures)]
            writer.writerow(values)
        return buffer.getvalue().rstrip("\n")

    def to_json(self) -> dict[str, Any]:
        def cell(c: Cell) -> dict[str, Any]:
            return {"value": c.value, "answered": c.answered, "total": c.total, "ci": list(c.ci) if c.ci else None, "incomplete": c.incomplete,
                    "reason": c.reason, "decimals": c.decimals, "applies": c.applies, "coverage_only": c.coverage_only}

        return {
            "title": self.title,
            "protocol": self.protocol,
            "key_columns": self.key_columns,
            "columns": self.columns,
            "note": self.note,
            "groups": self.groups,
            "supergroups": self.supergroups,
            "run_columns": self.run_columns,
            "rows": [
                {"run": r.run, "keys": r.keys, "cells": [cell(c) for c in r.cells], "coverage": cell(r.coverage) if r.coverage else None,
                 "failures": r.failures}
                for r in self.rows
            ],
        }

    def long_rows(self) -> Iterable[list[Any]]:
        """Tidy rows: one per run × metric (the metric named by table, row keys and column)."""
        if self.run_columns:
            for row in self.rows:
                metric = "/".join(k for k in row.keys if k)
                for run, c in zip(self.columns, row.cells):
                    if c.applies and not c.coverage_only:
                        yield [self.protocol, self.title, run, metric, _csv(c.value), _csv(c.answered), _csv(c.total),
                               _csv(c.ci[0] if c.ci else None), _csv(c.ci[1] if c.ci else None), c.incomplete, ""]
            return
        for row in self.rows:
            prefix = "/".join(row.keys[1:])
            for column, c in zip(self.columns, row.cells):
                metric = f"{prefix}/{column}" if prefix else column
                yield [self.protocol, self.title, row.run, metric, _csv(c.value), _csv(c.answered), _csv(c.total),
                       _csv(c.ci[0] if c.ci else None), _csv(c.ci[1] if c.ci else None), c.incomplete, row.failures]


LONG_HEADER = ["protocol", "table", "run", "metric", "value", "answered", "total", "ci_low", "ci_high", "incomplete", "run_failures"]


def _csv(value: Any) -> Any:
    return "" if value is None else value


_TEX = {"\\": "\\textbackslash{}", "&": "\\&", "%": "\\%", "$": "\\$", "#": "\\#", "_": "\\_", "{": "\\{", "}": "\\}",
        "~": "\\textasciitilde{}", "^": "\\textasciicircum{}", "*": "$^{*}$", "\n": " ", "\r": " "}


def _tex(text: Any) -> str:
    """Text safe inside a LaTeX tabular cell (a run label may hold _ & % #)."""
    return "".join(_TEX.get(ch, ch) for ch in str(text))


def _md(text: Any, *, table: bool = True) -> str:
    out = str(text).replace("\r", " ").replace("\n", " ")
    return out.replace("|", "\\|") if table else out


# ----------------------------------------------------------------------------------------- runs
