"""Tables cell for cell, through the CLI as a user prints them: every paper-layout table of the five
protocols as CSV that pandas reads with no options, plain cells that hold the paper's figure alone,
LaTeX and Markdown labels escaped, WISE's metric named in its title, GENIUS's Interleaved column,
runs grouped by the prefix of their labels."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from umni.cli import main
from umni.reporting.leaderboard import build_tables, find_runs
from umni.reporting.tables import Cell, Row, Table

pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")

#: protocol -> the options its bundled sim/umm run uses (GIR-Bench's official extractors need weights)
PROTOCOLS = {"umnibench": [], "genius": [], "aegis": [], "wise": [], "girbench": ["--option", "features=embed"]}
#: Characters TeX treats specially, a star (the coverage mark's look-alike) and HTML's brackets.
AWKWARD = "a_&%#$~^{}\\<>|*"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two runs of each protocol's bundled cases by sim/umm of two skills."""
    root = tmp_path_factory.mktemp("formats")
    made: dict[str, list[Path]] = {}
    for protocol, extra in PROTOCOLS.items():
        for skill in ("0.9", "0.4"):
            out = root / f"{protocol}-{skill}"
            argv = ["run", protocol, "--model", f"sim/umm?skill={skill}", "--out", str(out), "--cache", str(root / "cache"), "--quiet", *extra]
            assert main(argv) == 0
            made.setdefault(protocol, []).append(out)
    return made


@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
def test_every_paper_table_loads_with_pandas_as_it_is(runs, protocol, capsys, tmp_path):
    """The issue: a `# title` first line, several tables in one file, `STEM` four times."""
    assert main(["leaderboard", *map(str, runs[protocol]), "--format", "csv"]) == 0
    printed = tmp_path / "printed.csv"
    printed.write_text(capsys.readouterr().out)
    frame = pd.read_csv(printed)
    tables = build_tables(find_runs(runs[protocol]))
    assert list(frame.columns) == list(dict.fromkeys(frame.columns))  # unique
    if len(tables) > 1:
        assert frame.columns[0] == "table" and list(dict.fromkeys(frame["table"])) == [t.title for t in tables]
    for table in tables:
        rows = frame[frame["table"] == table.title] if len(tables) > 1 else frame
        assert len(rows) == len(table.rows)
        for name, column in zip(table.headers(), zip(*(r.cells for r in table.rows))):
            if all(isinstance(c.value, bool) or c.value is None for c in column) and any(isinstance(c.value, bool) for c in column):
                assert rows[name].tolist() == [c.value for c in column]
                continue
            numbers = [c.value if c.applies and c.value is not None else None for c in column]
            assert pd.api.types.is_numeric_dtype(rows[name]) or rows[name].isna().all(), (name, rows[name].tolist())
            assert [None if pd.isna(v) else v for v in rows[name]] == pytest.approx(numbers), name
            if any(not c.applies for c in column):  # not applicable: empty, with its flag
                assert rows[f"{name} not applicable"].tolist() == [not c.applies for c in column]
    assert main(["leaderboard", *map(str, runs[protocol]), "--out", str(tmp_path / "board")]) == 0
    written = sorted((tmp_path / "board" / "tables").glob("*.csv"))
    assert len(written) == len(tables)
    for path in written:
        single = pd.read_csv(path)
        assert "table" not in single.columns and single.columns.is_unique
    assert pd.read_csv(tmp_path / "board" / "tables.csv").shape[0] == sum(len(t.rows) for t in tables)


def test_aegis_headers_name_the_task_with_the_domain_group(runs, capsys, tmp_path):
    assert main(["leaderboard", *map(str, runs["aegis"]), "--format", "csv"]) == 0
    (tmp_path / "a.csv").write_text(capsys.readouterr().out)
    columns = list(pd.read_csv(tmp_path / "a.csv").columns)
    assert [c for c in columns if c.endswith("STEM")] == ["Understanding · STEM", "Generation · STEM", "Editing · STEM", "Interleaved Generation · STEM"]


#: A figure as a paper prints it: a number, a dash for none, an en dash where the metric does not apply, a tick or a cross.
FIGURE = re.compile(r"-?\d+(\.\d+)?|—|–|✓|✗")


@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
def test_plain_cells_carry_the_number_alone(runs, protocol, capsys):
    assert main(["leaderboard", *map(str, runs[protocol]), "--plain"]) == 0
    out = capsys.readouterr().out
    tables = build_tables(find_runs(runs[protocol]))
    for table, block in zip(tables, out.split("\n### ")):
        lines = block.splitlines()
        body = [line for line in lines if line.startswith("| ") and not line.startswith("| **")][1:]
        header = [h.strip() for h in lines[lines.index(next(line for line in lines if line.startswith("| "))) ].strip("|").split(" | ")]
        assert "coverage" not in header and "failures" not in header
        keys = len(table.key_columns)
        for line in body:
            cells = [c.strip() for c in line.strip("|").split(" | ")][keys:]
            assert cells and all(FIGURE.fullmatch(c) for c in cells), line
        assert "cells as the paper prints them" in block  # the intervals and coverage are in the footnotes
        if any(c.ci for r in table.rows for c in r.cells):
            assert re.search(r"\[\d+\.\d+, \d+\.\d+\]", block.split("\n\n", 2)[-1])


def test_latex_and_markdown_escape_every_awkward_label(tmp_path, capsys):
    """A run named by its directory (two runs of one model tell apart by it) holding every
    character TeX treats specially, a star and HTML's brackets."""
    dirs = [tmp_path / AWKWARD, tmp_path / "b<script>"]
    for out in dirs:
        assert main(["run", "wise", "--model", "sim/umm?skill=0.5", "--out", str(out), "--cache", str(tmp_path / "cache"), "--quiet"]) == 0
    assert main(["leaderboard", *map(str, dirs), "--format", "latex"]) == 0
    tex = capsys.readouterr().out
    row = next(line for line in tex.splitlines() if line.startswith("sim/umm?skill=0.5 @a"))
    label = row.split(" & ")[0]
    assert label == ("sim/umm?skill=0.5 @a\\_\\&\\%\\#\\$\\textasciitilde{}\\textasciicircum{}\\{\\}\\textbackslash{}"
                     "\\textless{}\\textgreater{}\\textbar{}\\textasteriskcentered{}")
    assert "$^{*}$" not in tex  # the coverage mark is a dagger: no star reads as it
    incomplete = next(line for line in tex.splitlines() if line.startswith("sim/umm?skill=0.5 @b"))
    assert incomplete.split(" & ")[0] == "sim/umm?skill=0.5 @b\\textless{}script\\textgreater{}"
    assert incomplete.split(" & ")[7].endswith("$^{\\dagger}$")  # Overall: 18 of the 1000 prompts
    assert "% † computed on incomplete coverage" in tex
    assert main(["leaderboard", *map(str, dirs), "--format", "latex", "--plain"]) == 0
    plain = capsys.readouterr().out
    assert "\\dagger" not in plain.split("\\end{tabular}")[0] and "\\textasteriskcentered{}" in plain
    assert main(["leaderboard", *map(str, dirs)]) == 0
    md = capsys.readouterr().out
    assert "| sim/umm?skill=0.5 @b&lt;script&gt; |" in md and "<script>" not in md
    assert "@a\\_&amp;%#$~^{}\\\\&lt;&gt;\\|\\* |" in md


def test_wise_names_the_metric_its_table_shows(runs, capsys, tmp_path):
    assert main(["leaderboard", str(runs["wise"][0])]) == 0
    title = capsys.readouterr().out.splitlines()[0]
    assert title.startswith("### WISE · categories (paper Table 1 layout): accuracy — ") and "the paper's Table 1 reports WiScore" in title
    legacy = tmp_path / "legacy"
    assert main(["run", "wise", "--model", "sim/umm", "--option", "scoring=legacy", "--out", str(legacy), "--cache", str(tmp_path / "cache"),
                 "--quiet"]) == 0
    assert main(["leaderboard", str(legacy), str(runs["wise"][0])]) == 0
    titles = [line for line in capsys.readouterr().out.splitlines() if line.startswith("### ")]
    assert titles[0] == "### WISE · categories (paper Table 1 layout): WiScore — the paper's Table 1 metric"
    assert titles[1].startswith("### WISE · categories (paper Table 1 layout): accuracy")  # another metric: a table of its own


def test_genius_table_has_the_papers_interleaved_column(runs, tmp_path, capsys):
    edit = tmp_path / "edit"
    assert main(["run", "genius", "--model", "sim/umm", "--option", "input_format=edit", "--out", str(edit), "--cache", str(tmp_path / "cache"),
                 "--quiet"]) == 0
    capsys.readouterr()
    table = build_tables(find_runs([runs["genius"][0], edit]))[0]
    assert table.columns[:2] == ["Interleaved", "Overall"]
    ticks = {row.run: row.cells[0].text() for row in table.rows}
    assert ticks == {"sim/umm?skill=0.9": "✓", "sim/umm": "✗"}
    assert "$\\checkmark$" in table.latex() and "$\\times$" in table.latex()
    assert main(["leaderboard", str(runs["genius"][0]), str(edit), "--format", "csv"]) == 0
    (tmp_path / "g.csv").write_text(capsys.readouterr().out)
    assert pd.read_csv(tmp_path / "g.csv")["Interleaved"].tolist() == [row.cells[0].value for row in table.rows]


def test_group_lists_runs_under_the_prefix_of_their_labels(runs, tmp_path, capsys):
    """As WISE's Table 1 lists Dedicated T2I and Unified MLLM models apart: runs labelled
    ``Gen/…`` and ``Und/…`` (the label a run was given) grouped, groups in the order asked."""
    labelled = []
    for i, (source, label) in enumerate([(runs["wise"][0], "Und/strong"), (runs["wise"][1], "Gen/weak"), (runs["wise"][0], "Und/again")]):
        copy = tmp_path / f"run{i}"
        copy.mkdir()
        for name in ("results.jsonl", "tables.json"):
            (copy / name).write_bytes((source / name).read_bytes())
        summary = json.loads((source / "summary.json").read_text()) | {"label": label}
        (copy / "summary.json").write_text(json.dumps(summary))
        labelled.append(str(copy))
    assert main(["leaderboard", *labelled, "--group", "Gen,Und", "--plain"]) == 0
    rows = [line.split(" | ")[0].strip("| ") for line in capsys.readouterr().out.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert rows == ["**Gen**", "weak", "**Und**", "strong", "again"]
    assert main(["leaderboard", *labelled, "--group", "--format", "latex"]) == 0
    tex = capsys.readouterr().out
    assert tex.index("\\multicolumn{10}{l}{\\textit{Und}}") < tex.index("\\multicolumn{10}{l}{\\textit{Gen}}")  # as they come
    assert main(["leaderboard", *labelled, "--group", "--format", "csv"]) == 0
    (tmp_path / "g.csv").write_text(capsys.readouterr().out)
    frame = pd.read_csv(tmp_path / "g.csv")
    assert frame[["group", "run"]].values.tolist() == [["Und", "strong"], ["Und", "again"], ["Gen", "weak"]]


def test_group_makes_column_groups_of_a_runs_as_columns_table():
    table = Table("t", "umnibench", ["Domain"], ["Und/a", "Gen/b", "Und/c", "Average"], run_columns=True)
    table.rows.append(Row("", ["Plant"], [Cell(1.0), Cell(2.0), Cell(3.0), Cell(2.0)], None, None))
    grouped = table.grouped(["Gen"])
    assert grouped.columns == ["b", "a", "c", "Average"] and grouped.groups == [["Gen", 1], ["Und", 2], ["", 1]]
    assert [c.value for c in grouped.rows[0].cells] == [2.0, 1.0, 3.0, 2.0]
    assert grouped.headers() == ["Gen · b", "Und · a", "Und · c", "Average"]


def test_repeated_header_names_are_made_unique():
    table = Table("t", "x", ["run"], ["run", "A", "A"])
    assert table.headers() == ["run (2)", "A", "A (2)"]
