"""A leaderboard table as data (cells that carry their coverage and interval, rows, titles and
notes) and its renderings: Markdown, LaTeX, CSV as laid out, the tidy long CSV (one row per run x
metric) and JSON.

Most tables have one row per run. A paper that puts models in columns (UmniBench's question and
domain tables) is a `Table` with ``run_columns``: its columns are the runs, its rows the metrics,
and the runs' coverage and failures are rows of their own at the bottom.

Every rendering but JSON comes in two forms: full (each score with its interval, its coverage and
the incomplete-coverage mark) and plain (each score as the paper prints it, a number alone; the
intervals, the coverage and the marks listed in footnotes below the table, and the coverage and
failures columns or rows left to the footnotes too). Where a paper groups its rows by model type,
`Table.grouped` groups the runs by the prefix of their labels (``Dedicated T2I/FLUX.1-dev``).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from umni.reporting.format import format_cell

#: What a cell whose metric does not apply prints (the papers' "-"); a missing score prints "—".
NOT_APPLICABLE = "–"
#: The incomplete-coverage mark in Markdown and in LaTeX (a dagger there, so that no `*` a run's
#: label holds can read as the mark).
MARK = "*"
TEX_MARK = "$^{\\dagger}$"
#: What joins a column group's name and a column's name into one header.
GROUP_JOIN = " · "


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
    #: why a score has no interval where others have one (a statistic of the whole set; too few cases)
    no_interval: str | None = None

    @property
    def incomplete(self) -> bool:
        return self.applies and self.answered is not None and self.total is not None and self.answered < self.total

    @property
    def shows_coverage_only(self) -> bool:
        return self.value is None and self.ci is None and self.answered is not None and self.total is not None and self.coverage_only

    def number(self, escape: Callable[[str], str] = str) -> str:
        """The figure alone, as the paper prints it (a text figure made safe by `escape`)."""
        if not self.applies:
            return NOT_APPLICABLE
        return escape(self.value) if isinstance(self.value, str) else format_cell(self.value, self.decimals)

    def details(self, escape: Callable[[str], str] = str) -> str:
        """What the full form prints after the figure: the reason for no value, the interval and
        the coverage (without the mark)."""
        text = ""
        if self.value is None and self.reason:
            text += f" ({escape(self.reason)})"
        if self.ci is not None:
            text += f" [{format_cell(self.ci[0], self.decimals)}, {format_cell(self.ci[1], self.decimals)}]"
        if self.answered is not None and self.total is not None:
            text += f" ({self.answered}/{self.total})"
        return text

    def text(self, *, plain: bool = False, mark: str = MARK, escape: Callable[[str], str] = str) -> str:
        """The cell as a table prints it: plain, the figure alone; else with its details and `mark`
        when computed on incomplete coverage."""
        if not self.applies:
            return NOT_APPLICABLE
        if self.shows_coverage_only:
            return f"{self.answered}/{self.total}" + ("" if plain or not self.incomplete else mark)
        if plain:
            return self.number(escape)
        return self.number(escape) + self.details(escape) + (mark if self.incomplete and self.value is not None else "")


@dataclass
class Row:
    """One table row: a run's scores, or in a ``run_columns`` table one metric across the runs
    (``run`` empty, no coverage or failures of its own)."""

    run: str
    keys: list[str]
    cells: list[Cell]
    coverage: Cell | None
    failures: int | None
    #: the group a grouped table lists this run under (`Table.grouped`)
    group: str = ""


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
    #: rows listed under group headings (`grouped`)
    row_groups: bool = False
    #: whether the footnotes explain the cells' intervals, coverage and marks (a table of scores)
    legend: bool = True
    #: how each run's numbers were made, one footnote line a run (`umni.reporting.methods.how_made`)
    how_made: list[str] = field(default_factory=list)

    # --------------------------------------------------------------------------------- shape
    def headers(self) -> list[str]:
        """Score column names, each prefixed by its group's name when the table has groups, made
        unique (a repeated name gets " (2)", " (3)"…)."""
        owners = [name for name, span in self.groups for _ in range(int(span))]
        owners += [""] * (len(self.columns) - len(owners))
        names = [f"{owner}{GROUP_JOIN}{column}" if owner else column for owner, column in zip(owners, self.columns)]
        return _unique(names, taken=set(self.key_columns))

    def _tail(self, plain: bool) -> list[str]:
        """The coverage and failures columns of a one-row-per-run table (none in plain form)."""
        return [] if self.run_columns or plain else ["coverage", "failures"]

    def _shown_rows(self, plain: bool) -> list[Row]:
        """The rows printed: in plain form a runs-as-columns table's coverage and failures rows go
        to the footnotes."""
        if plain and self.run_columns:
            return [r for r in self.rows if r.keys[:1] not in (["coverage"], ["failures"])]
        return self.rows

    def _row_texts(self, row: Row, previous: Row | None, plain: bool, mark: str, escape: Callable[[str], str]) -> list[str]:
        keys = [escape(k) for k in row.keys]
        if self.run_columns and previous is not None and row.keys and previous.keys and row.keys[0] == previous.keys[0]:
            keys[0] = ""  # a group's name once, on its first row, as the paper prints it
        cells = [c.text(plain=plain, mark=mark, escape=escape) for c in row.cells]
        tail = [] if self.run_columns or plain else [row.coverage.text(mark=mark) if row.coverage else "", "" if row.failures is None else str(row.failures)]
        return [*keys, *cells, *tail]

    def grouped(self, order: Sequence[str] | None = None) -> Table:
        """The table with its runs grouped by the prefix of their labels before the first "/"
        (``Und/x`` lists x under Und), groups in `order` (then by first appearance), each group's
        runs in the table's order. One-row-per-run tables get group heading rows; a runs-as-columns
        table gets column groups. A label without "/" stays ungrouped, first."""
        def split(label: str) -> tuple[str, str]:
            group, sep, name = label.partition("/")
            return (group, name) if sep and name else ("", label)

        known = list(order or [])
        if self.run_columns:
            runs = [c for c in self.columns if c != "Average"]
            rank = _group_rank([split(c)[0] for c in runs], known)
            placed = sorted(range(len(runs)), key=lambda i: rank[split(runs[i])[0]])
            extra = list(range(len(runs), len(self.columns)))
            pick = placed + extra
            rows = [replace(r, cells=[r.cells[i] for i in pick]) for r in self.rows]
            spans: list[list[Any]] = []
            for i in placed:
                group = split(runs[i])[0]
                if spans and spans[-1][0] == group:
                    spans[-1][1] += 1
                else:
                    spans.append([group, 1])
            spans += [["", 1] for _ in extra]
            columns = [split(runs[i])[1] for i in placed] + [self.columns[i] for i in extra]
            return replace(self, columns=columns, rows=rows, groups=spans)
        rank = _group_rank([split(r.run)[0] for r in self.rows], known)
        rows = [replace(r, group=split(r.run)[0], keys=[split(r.keys[0])[1], *r.keys[1:]] if r.keys else r.keys)
                for r in sorted(self.rows, key=lambda r: rank[split(r.run)[0]])]
        return replace(self, rows=rows, row_groups=True)

    # ------------------------------------------------------------------------------ footnotes
    def footnotes(self, *, plain: bool, mark: str, escape: Callable[[str], str], code: Callable[[str], str],
                  note: Callable[[str], str]) -> list[str]:
        """The lines below the table: its note, what the marks mean and, in plain form, each
        run's intervals, coverage and reasons; every cell without an interval where one could be,
        by reason. `escape` makes a label safe, `code` sets a mark apart, `note` makes the note safe."""
        lines = [note(self.note)] if self.note else []
        lines += [note(line) for line in self.how_made]
        if not self.legend:
            return lines
        if plain:
            lines.append("cells as the paper prints them; below, by run: each score's 95 % bootstrap interval over cases "
                         f"[low, high] and coverage (answered/total), {code(mark)} where computed on incomplete coverage")
            lines += self._plain_details(mark, escape)
        else:
            lines.append(f"{code(mark)} computed on incomplete coverage (answered/total in brackets); [low, high] a 95 % bootstrap interval over cases")
        if any(not c.applies for row in self.rows for c in row.cells):
            lines.append(f"{code(NOT_APPLICABLE)} the metric does not apply (not a missing score)")
        lines += self._missing_intervals(escape)
        return lines

    def _plain_details(self, mark: str, escape: Callable[[str], str]) -> list[str]:
        headers = self.headers()
        lines = []
        if self.run_columns:
            metric_rows = [r for r in self.rows if r.keys[:1] not in (["coverage"], ["failures"])]
            extra = {r.keys[0]: r for r in self.rows if r.keys[:1] in (["coverage"], ["failures"])}
            for j, column in enumerate(headers):
                parts = [f"{escape(' '.join(k for k in r.keys if k))}{r.cells[j].details(escape)}{mark if r.cells[j].incomplete else ''}"
                         for r in metric_rows if r.cells[j].applies and r.cells[j].details()]
                if "coverage" in extra and extra["coverage"].cells[j].applies:
                    parts.append(f"coverage {extra['coverage'].cells[j].text(mark=mark)} nodes")
                if "failures" in extra and extra["failures"].cells[j].applies and extra["failures"].cells[j].value is not None:
                    parts.append(f"{extra['failures'].cells[j].value} failed")
                if parts:
                    lines.append(f"{escape(column)}: " + "; ".join(parts))
            return lines
        for row in self.rows:
            name = " ".join(k for k in row.keys if k)
            parts = [f"{escape(header)}{c.details(escape)}{mark if c.incomplete and c.value is not None else ''}"
                     for header, c in zip(headers, row.cells) if c.applies and c.details()]
            if row.coverage is not None:
                parts.append(f"coverage {row.coverage.text(mark=mark)} nodes")
            if row.failures is not None:
                parts.append(f"{row.failures} failed")
            if parts:
                lines.append(f"{escape(name)}: " + "; ".join(parts))
        return lines

    def _missing_intervals(self, escape: Callable[[str], str]) -> list[str]:
        """Cells with a value but no interval for a stated reason: under each reason, by run, the
        scores concerned."""
        headers = self.headers()
        by_reason: dict[str, dict[str, list[str]]] = {}
        for row in self.rows:
            metric = " ".join(k for k in row.keys if k)
            for j, c in enumerate(row.cells):
                if c.no_interval and c.value is not None and c.ci is None:
                    run, score = (headers[j], metric) if self.run_columns else (metric, headers[j])
                    by_reason.setdefault(c.no_interval, {}).setdefault(run, []).append(score)
        return [f"no interval ({escape(reason)}): " + "; ".join(f"{escape(run)}: {', '.join(escape(s) for s in scores)}" for run, scores in runs.items())
                for reason, runs in by_reason.items()]

    # ------------------------------------------------------------------------------ renderings
    def markdown(self, *, plain: bool = False) -> str:
        """GitHub Markdown; always a valid table (escaped cells, a row even when no run has scores).
        Labels and notes have HTML and Markdown's own marks escaped."""
        header = [*self.key_columns, *self.headers(), *self._tail(plain)]
        lines = [f"### {_md(self.title)}", "", "| " + " | ".join(_md(h) for h in header) + " |", "|" + "---|" * len(header)]
        rows = self._shown_rows(plain)
        for previous, row in zip([None, *rows], rows):
            if self.row_groups and row.group and (previous is None or previous.group != row.group):
                lines.append("| " + " | ".join([f"**{_md(row.group)}**", *[""] * (len(header) - 1)]) + " |")
            lines.append("| " + " | ".join(_cell_md(c) for c in self._row_texts(row, previous, plain, MARK, _md)) + " |")
        if not rows:
            lines.append("| " + " | ".join(["—"] * len(header)) + " |")
        notes = self.footnotes(plain=plain, mark=MARK, escape=_md, code=lambda m: f"`{m}`", note=_md_note)
        return "\n".join([*lines, "", *notes])

    def latex(self, *, plain: bool = False) -> str:
        """A booktabs tabular to paste into a paper: names left, numbers right; in full form the
        interval and (answered/total) beside each score and a dagger for incomplete coverage. Every
        character TeX treats specially is escaped in labels; notes follow as comments."""
        tail = self._tail(plain)
        header = [*self.key_columns, *self.columns, *tail]
        spec = "l" * len(self.key_columns) + "r" * (len(header) - len(self.key_columns))
        lines = ["% " + _comment(self.title), "\\begin{tabular}{" + spec + "}", "\\toprule"]
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
        rows = self._shown_rows(plain)
        for previous, row in zip([None, *rows], rows):
            if self.row_groups and row.group and (previous is None or previous.group != row.group):
                lines.append(f"\\multicolumn{{{len(header)}}}{{l}}{{\\textit{{{_tex(row.group)}}}}} \\\\")
            lines.append(" & ".join(_cell_tex(c) for c in self._row_texts(row, previous, plain, TEX_MARK, _tex)) + " \\\\")
        lines += ["\\bottomrule", "\\end{tabular}"]
        notes = self.footnotes(plain=plain, mark="†", escape=str, code=str, note=str)
        return "\n".join([*lines, *("% " + _comment(n) for n in notes)])

    def csv_columns(self) -> list[str]:
        """The header of the laid-out CSV: key columns, then per score column its value, interval
        ends and coverage (a column of flags: its value alone; a column where some metric does not
        apply: a flag column beside), then the run's coverage and failures."""
        head = ["group"] if self.row_groups else []
        head += list(self.key_columns)
        for j, name in enumerate(self.headers()):
            column = [row.cells[j] for row in self.rows if j < len(row.cells)]
            if column and all(isinstance(c.value, bool) or c.value is None for c in column) and any(isinstance(c.value, bool) for c in column):
                head.append(name)
                continue
            head += [name, f"{name} ci_low", f"{name} ci_high", f"{name} answered", f"{name} total"]
            if any(not c.applies for c in column):
                head.append(f"{name} not applicable")
        return head + ([] if self.run_columns else ["coverage answered", "coverage total", "failures"])

    def csv_rows(self) -> Iterable[dict[str, Any]]:
        """The table's rows as the laid-out CSV has them (`csv_columns`): numbers as numbers, a
        missing or not-applicable value empty (its flag column tells them apart)."""
        headers, columns = self.headers(), set(self.csv_columns())
        for row in self.rows:
            values: dict[str, Any] = {"group": row.group} if self.row_groups else {}
            values.update(zip(self.key_columns, row.keys))
            for name, c in zip(headers, row.cells):
                values[name] = c.value if c.applies else None
                if f"{name} ci_low" in columns:
                    values.update({f"{name} ci_low": c.ci[0] if c.ci else None, f"{name} ci_high": c.ci[1] if c.ci else None,
                                   f"{name} answered": c.answered, f"{name} total": c.total})
                if f"{name} not applicable" in columns:
                    values[f"{name} not applicable"] = not c.applies
            if not self.run_columns:
                values.update({"coverage answered": row.coverage.answered if row.coverage else None,
                               "coverage total": row.coverage.total if row.coverage else None, "failures": row.failures})
            yield values

    def csv(self) -> str:
        """The table as laid out (one row per table row), one CSV file that `pandas.read_csv` reads
        with no options: a header of unique names, then values only. The tidy one-row-per-metric
        CSV is `long_rows`."""
        return tables_csv([self])

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
            **({"how_made": self.how_made} if self.how_made else {}),
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
#: The column naming each row's table when one CSV holds several tables.
TABLE_COLUMN = "table"


def tables_csv(tables: Sequence[Table]) -> str:
    """Tables laid out in one CSV: with several, a first `table` column names each row's table and
    the header is every table's columns in order of appearance (a row leaves the others empty)."""
    several = len(tables) > 1
    header = [TABLE_COLUMN] if several else []
    for table in tables:
        header += [c for c in table.csv_columns() if c not in header]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=header, lineterminator="\n", restval="", extrasaction="raise")
    writer.writeheader()
    for table in tables:
        for row in table.csv_rows():
            writer.writerow({k: _csv(v) for k, v in ({TABLE_COLUMN: table.title, **row} if several else row).items()})
    return buffer.getvalue()


def csv_text(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A CSV file of a header and rows (None written empty)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows([_csv(v) for v in row] for row in rows)
    return buffer.getvalue()


def _csv(value: Any) -> Any:
    return "" if value is None else value


def _unique(names: list[str], taken: set[str]) -> list[str]:
    seen = set(taken)
    out = []
    for name in names:
        candidate, n = name, 1
        while candidate in seen:
            n += 1
            candidate = f"{name} ({n})"
        seen.add(candidate)
        out.append(candidate)
    return out


def _group_rank(groups: list[str], order: list[str]) -> dict[str, int]:
    """Each group's place: ungrouped first, then `order`, then by first appearance."""
    ranked = [""] + [g for g in order if g] + [g for g in dict.fromkeys(groups) if g and g not in order]
    return {g: i for i, g in enumerate(ranked)}


#: TeX's special characters in text, each as text mode prints it (`<`, `>` and `|` come out as
#: other glyphs in the default font encoding; `*` is set apart from the coverage mark).
_TEX = {"\\": "\\textbackslash{}", "&": "\\&", "%": "\\%", "$": "\\$", "#": "\\#", "_": "\\_", "{": "\\{", "}": "\\}",
        "~": "\\textasciitilde{}", "^": "\\textasciicircum{}", "<": "\\textless{}", ">": "\\textgreater{}", "|": "\\textbar{}",
        "*": "\\textasteriskcentered{}", "\n": " ", "\r": " "}
#: Cell figures TeX prints with a macro.
_TEX_SYMBOLS = {"✓": "$\\checkmark$", "✗": "$\\times$", NOT_APPLICABLE: "--", "—": "---", "−": "$-$"}


def _tex(text: Any) -> str:
    """Text safe inside a LaTeX tabular cell: every character TeX treats specially, escaped."""
    return "".join(_TEX.get(ch, ch) for ch in str(text))


def _cell_tex(text: str) -> str:
    """A rendered cell (already escaped where it holds labels) with its symbols as TeX prints them."""
    return _TEX_SYMBOLS.get(text, text)


def _comment(text: str) -> str:
    """A note as one LaTeX comment line."""
    return str(text).replace("\r", " ").replace("\n", " ")


#: Characters escaped in Markdown labels: HTML's, the table's pipe and Markdown's own emphasis and code marks.
_MD = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "|": "\\|", "\\": "\\\\", "*": "\\*", "_": "\\_", "`": "\\`", "\n": " ", "\r": " "}


def _md(text: Any) -> str:
    """A label safe in a Markdown table cell: HTML escaped, no pipe, no emphasis."""
    return "".join(_MD.get(ch, ch) for ch in str(text))


def _cell_md(text: str) -> str:
    """A rendered cell: its pipes escaped (labels in it are escaped already)."""
    return text.replace("\r", " ").replace("\n", " ")


def _md_note(text: str) -> str:
    """A note line below a Markdown table: HTML escaped; its code spans kept."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\r", " ").replace("\n", " ")


def tex_escape(text: Any) -> str:
    """Text safe in LaTeX: every character TeX treats specially escaped (as in table labels)."""
    return _tex(text)


def markdown_escape(text: Any) -> str:
    """Text safe in Markdown: HTML, pipes and emphasis marks escaped (as in table labels)."""
    return _md(text)
