"""Leaderboards in each paper's layout: coverage beside every score, sorted rows, distinct labels,
tidy CSV, always-valid Markdown and seeded bootstrap intervals. Numbers below are hand-computed
from the summaries written here."""

import csv
import json
import re
from pathlib import Path

import pytest

from umni.cli import main
from umni.reporting.leaderboard import LONG_HEADER, Run, bootstrap_headline, build_tables, write_leaderboard
from umni.store.runfolder import Counts, RunFolder, Summary


def summary(protocol, scores, *, bindings=None, nodes=10, failed=0, blocked=0, options=None):
    return Summary.model_validate({
        "protocol": protocol,
        "title": protocol,
        "bindings": bindings or {"generate": "m/a", "judge": "m/a"},
        "options": options or {},
        "counts": {"cases": 2, "nodes": nodes, "skipped": 0, "skipped_cases": 0},
        "failures": {"backend": failed, "parse": 0, "blocked": blocked},
        "scores": scores,
    })


def md_tables_are_valid(text: str) -> None:
    """Every Markdown table has a header, a rule and rows with the header's cell count."""
    blocks = [b for b in text.split("\n\n") if b.lstrip().startswith("|")]
    assert blocks
    for block in blocks:
        lines = block.strip().splitlines()
        widths = [len(re.split(r"(?<!\\)\|", line)) for line in lines]
        assert len(set(widths)) == 1, block
        assert re.fullmatch(r"\|(---\|)+", lines[1])
        assert len(lines) >= 3


UMNI = {
    "overall": 50.0, "stages": {"generation": 100.0, "interaction": 50.0, "counterfactual": 0.0},
    "questions": {f"Q{i}": 50.0 for i in range(1, 10)}, "domains": {"Plant": 40.0, "Spatial": 60.0},
    "answered": {f"Q{i}": 2 for i in range(1, 10)}, "failed": {f"Q{i}": 0 for i in range(1, 10)},
}


def test_umnibench_stage_table_with_question_coverage_and_incomplete_mark():
    broken = json.loads(json.dumps(UMNI)) | {"overall": 100.0}
    broken["answered"] = {f"Q{i}": (1 if i <= 3 else 0) for i in range(1, 10)}
    broken["failed"] = {f"Q{i}": (1 if i <= 3 else 2) for i in range(1, 10)}
    tables = build_tables([summary("umnibench", UMNI, nodes=24), summary("umnibench", broken, bindings={"generate": "m/b"}, nodes=24, failed=3, blocked=14)],
                          layout="tidy")
    main = tables[0]
    assert main.columns == ["Overall", "Generation", "Interaction", "Counterfactual"]
    # sorted by Overall: the broken run's 100.0 comes first, but marked as computed on 3 of 18 answers
    assert [r.run for r in main.rows] == ["m/b", "m/a"]
    top = main.rows[0]
    assert (top.cells[0].answered, top.cells[0].total, top.cells[0].incomplete) == (3, 18, True)
    assert (top.coverage.answered, top.coverage.total) == (7, 24) and top.failures == 3
    text = main.markdown()
    assert "| m/b | 100.00 (3/18)* | 100.00 (3/6)* | 50.00 (0/6)* | 0.00 (0/6)* | 7/24* | 3 |" in text
    assert "| m/a | 50.00 (18/18) | 100.00 (6/6) | 50.00 (6/6) | 0.00 (6/6) | 24/24 | 0 |" in text
    assert [t.title for t in tables] == ["UmniBench · overall and stages", "UmniBench · questions", "UmniBench · domains"]


def test_aegis_main_table_is_task_by_domain_group():
    main_table = {
        "understanding": {"STEM": 10.0, "Humanities": 20.0, "Daily life": 30.0, "overall": 20.0, "scored": 3, "inference_failures": 1, "evaluation_failures": 0},
        "generation": {"STEM": 40.0, "Humanities": None, "Daily life": 60.0, "overall": 50.0, "scored": 2, "inference_failures": 0, "evaluation_failures": 0},
        "overall": {"STEM": 25.0, "Humanities": 20.0, "Daily life": 45.0, "overall": 32.0, "scored": 5, "inference_failures": 1, "evaluation_failures": 0},
    }
    tables = build_tables([summary("aegis", {"overall": 32.0, "main_table": main_table})], layout="tidy")
    assert len(tables) == 1  # the per-task breakdown (the paper's main table is the paper layout)
    t = tables[0]
    assert t.key_columns == ["run", "task"] and t.columns == ["STEM", "Humanities", "Daily life", "Overall"]
    assert [r.keys[1] for r in t.rows] == ["understanding", "generation", "overall"]
    text = t.markdown()
    assert "| m/a | understanding | 10.00 | 20.00 | 30.00 | 20.00 (3/4)* |" in text
    assert "| m/a | generation | 40.00 | — | 60.00 | 50.00 (2/2) |" in text
    md_tables_are_valid(text)


def test_genius_dimension_columns_combine_marks_with_the_weights():
    scores = {
        "overall": 34.38, "rc": 50.0, "vc": 12.5, "aq": 0.0, "cases": 4, "scored": {"rc": 4, "vc": 4, "aq": 3},
        "weights": {"rc": 0.6, "vc": 0.35, "aq": 0.05},
        "dimensions": {"implicit_pattern": {"items": 2, "missing_outputs": 1, "rc": 50.0, "vc": 0.0, "aq": 20.0}},
    }
    t = build_tables([summary("genius", scores)], layout="tidy")[0]
    assert t.columns == ["Overall", "RC", "VC", "AQ", "implicit_pattern"]
    row = t.rows[0]
    # 0.6 * 50 + 0.35 * 0 + 0.05 * 20 = 31.0, on 1 of 2 items (one output missing)
    assert (row.cells[4].value, row.cells[4].answered, row.cells[4].total) == (31.0, 1, 2)
    assert (row.cells[3].answered, row.cells[3].total) == (3, 4) and row.cells[0].answered == 3


def test_wise_category_table_and_girbench_task_table():
    wise = {"overall": 0.5, "metric": "accuracy", "culture": 1.0, "time": 0.0, "space": None, "biology": None, "physics": None, "chemistry": None,
            "scored": 2, "failed": 1, "expected": 1000, "scored_by_category": {"culture": 1, "time": 1}, "failed_by_category": {"culture": 1}}
    gir = {"overall": 0.25, "overall_of": ["uni_understanding", "text"],
           "metrics": {"uni_understanding": {"score": 0.5, "cases": 4, "scored": 4}, "text": {"score": 0.0, "cases": 2, "scored": 1}}}
    gt, wt = build_tables([summary("wise", wise), summary("girbench", gir)], layout="tidy")
    assert wt.columns == ["Cultural", "Time", "Space", "Biology", "Physics", "Chemistry", "Overall"]  # the paper's Table 1 names
    assert wt.rows[0].cells[0].text() == "1.00 (1/2)*" and wt.rows[0].cells[6].text() == "0.50 (2/1000)*"
    assert gt.columns == ["Uni understanding", "T2I text", "Overall"]
    assert gt.rows[0].cells[2].text() == "0.250 (5/6)*"  # GIR-Bench's tables print three decimals


def test_deviations_from_the_official_code_are_named_beside_the_table():
    gir = {"overall": 0.5, "overall_of": ["sudoku"], "metrics": {"sudoku": {"score": 0.5, "cases": 2, "scored": 2}},
           "deviations": [{"id": "sudoku-cells", "metric": "sudoku", "changes_score": True}, {"id": "features-embed", "changes_score": False}]}
    table = build_tables([summary("girbench", gir)], with_ci=False)[0]
    assert "deviations from the official code: sudoku-cells (changes the score), features-embed" in table.markdown()


def test_markdown_stays_valid_with_pipes_newlines_and_no_scores():
    s = summary("umnibench", {"overall": None, "stages": {}, "questions": {}, "domains": {}, "answered": {}, "failed": {}},
                bindings={"understand": "openai/x?a=1|2\nb"})
    text = "\n\n".join(t.markdown() for t in build_tables([s]))
    md_tables_are_valid(text)
    assert "openai/x?a=1\\|2 b" in text
    other = summary("someproto", {"overall": 3.0, "parts": {}})
    md_tables_are_valid(build_tables([other])[0].markdown())


def test_labels_tell_runs_apart(tmp_path):
    runs = []
    for seed in (0, 1):
        path = tmp_path / f"s{seed}"
        path.mkdir()
        (path / "run.json").write_text(json.dumps({"seed": seed}))
        runs.append(Run(summary("umnibench", UMNI, options={"ability": "full"}), path))
    runs.append(Run(summary("umnibench", UMNI, options={"ability": "editing"}), None))
    labels = [r.run for r in build_tables(runs, with_ci=False, layout="tidy")[0].rows]
    assert len(set(labels)) == 3
    assert any("ability=editing" in label for label in labels) and any("seed=1" in label for label in labels)


def test_long_csv_has_one_row_per_run_and_metric(tmp_path):
    tables = build_tables([summary("umnibench", UMNI), summary("umnibench", UMNI, bindings={"generate": "m/b"})], layout="tidy")
    paths = write_leaderboard(tables, tmp_path)
    rows = list(csv.reader(paths["csv"].open()))
    assert rows[0] == LONG_HEADER
    assert all(len(r) == len(LONG_HEADER) for r in rows)
    # per run: 4 main columns + 9 questions + 2 domains
    assert len(rows) - 1 == 2 * (4 + 9 + 2)
    keys = [(r[2], r[1], r[3]) for r in rows[1:]]
    assert len(keys) == len(set(keys))
    q1 = [r for r in rows[1:] if r[2] == "m/b" and r[3] == "Q1"][0]
    assert q1[4:8] == ["50.0", "2", "2", ""]
    md_tables_are_valid(paths["markdown"].read_text())


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("lb")
    assert main(["run", "umnibench", "--model", "sim/umm?skill=0.6", "--limit", "6", "--out", str(root / "run"),
                 "--cache", str(root / "cache"), "--quiet"]) == 0
    return root / "run"


def test_bootstrap_interval_is_seeded_and_brackets_the_headline(small_run):
    run = Run(RunFolder(small_run).read_summary(), small_run)
    first, second = bootstrap_headline(run), bootstrap_headline(run)
    assert first == second and first is not None
    overall = run.summary.scores["overall"]
    assert first[0] <= overall <= first[1] and first[0] < first[1]


def test_leaderboard_command_writes_all_three_files(small_run, tmp_path, capsys):
    assert main(["leaderboard", str(small_run), "--out", str(tmp_path / "lb")]) == 0
    board = json.loads((tmp_path / "lb" / "leaderboard.json").read_text())
    assert board[0]["run_columns"] and board[0]["title"].startswith("UmniBench · questions by stage")
    headline = next(r for r in board[0]["rows"] if r["keys"] == ["Ave.", ""])["cells"][0]
    assert headline["ci"] and headline["answered"] == headline["total"] == 54
    md_tables_are_valid((tmp_path / "lb" / "leaderboard.md").read_text())
    assert Path(tmp_path / "lb" / "leaderboard.csv").read_text().startswith(",".join(LONG_HEADER))


def test_coverage_counts_pending_nodes_apart():
    """A --phase generate,edit run leaves the answer nodes pending: not answered, not failed."""
    from umni.reporting.leaderboard import coverage_line, run_coverage

    summary = Summary(protocol="umnibench", counts=Counts(cases=26, nodes=312, skipped=0, pending=234), failures={})
    cell, failed = run_coverage(summary)
    assert (cell.answered, cell.total, failed) == (78, 312, 0)
    assert coverage_line(summary).startswith("coverage: 78/312 nodes answered, 0 failed, 234 pending")


def test_a_wise_overall_without_a_value_says_why():
    """Overall weights all six categories: with some unscored it has no value, and says which."""
    wise = {"overall": None, "metric": "accuracy", "culture": 1.0, "time": 0.5, "space": None, "biology": None, "physics": 1.0, "chemistry": 0.0,
            "scored": 4, "failed": 0, "scored_by_category": {"culture": 1, "time": 2, "physics": 1, "chemistry": 1}}
    table = build_tables([summary("wise", wise)])[0]
    overall = table.rows[0].cells[-1]
    assert overall.value is None and overall.reason == "no score for space, biology: Overall weights all six categories"
    assert "no score for space, biology" in table.markdown()
    assert table.to_json()["rows"][0]["cells"][-1]["reason"] == overall.reason


def test_every_protocol_option_has_a_description():
    """`umni protocols --options` prints each option's description: none may be blank."""
    from umni.protocols.protocol import get_protocol, known_protocols

    blank = [f"{name}.{key}" for name in known_protocols() for key, info in get_protocol(name).Options.model_fields.items() if not info.description]
    assert blank == []


def test_latex_and_laid_out_csv_formats(small_run, capsys):
    assert main(["leaderboard", str(small_run), "--format", "latex", "--layout", "tidy"]) == 0
    tex = capsys.readouterr().out
    first = tex.split("\\end{tabular}")[0]
    assert "\\begin{tabular}{lrrrrrr}" in first and "\\toprule" in first and "\\bottomrule" in first
    header = first.split("\\toprule\n")[1].splitlines()[0]
    assert header == "run & Overall & Generation & Interaction & Counterfactual & coverage & failures \\\\"
    row = first.split("\\midrule\n")[1].splitlines()[0]
    assert row.count(" & ") == 6 and row.startswith("sim/umm?skill=0.6 & ") and "(54/54)" in row
    assert main(["leaderboard", str(small_run), "--format", "csv", "--layout", "paper"]) == 0
    paper_csv = list(csv.reader(capsys.readouterr().out.splitlines()))
    assert paper_csv[1][:3] == ["UmniBench · questions by stage (paper Table 2)", "Generation", "Q1"]  # two tables: a table column first
    paper_csv = [row[1:] for row in paper_csv]
    assert main(["leaderboard", str(small_run), "--format", "csv", "--layout", "tidy"]) == 0
    assert capsys.readouterr().out.startswith(",".join(LONG_HEADER))
    assert main(["leaderboard", str(small_run), "--format", "markdown", "--layout", "tidy"]) == 0
    assert "### UmniBench · overall and stages" in capsys.readouterr().out
    run = "sim/umm?skill=0.6"
    assert paper_csv[0][:7] == ["Stage", "Question", run, f"{run} ci_low", f"{run} ci_high", f"{run} answered", f"{run} total"]
    overall = next(r for r in paper_csv if r[:2] == ["Ave.", ""])
    summary = RunFolder(small_run).read_summary()
    assert float(overall[2]) == summary.scores.overall and float(overall[3]) <= float(overall[2]) <= float(overall[4])


def test_latex_escapes_what_a_label_may_hold():
    from umni.reporting.tables import _tex

    assert _tex("a_b & 50% #1 {x} ~ ^ \\") == "a\\_b \\& 50\\% \\#1 \\{x\\} \\textasciitilde{} \\textasciicircum{} \\textbackslash{}"


def test_paired_comparison_of_two_runs_on_the_same_cases(small_run, tmp_path, capsys):
    from umni.reporting.leaderboard import find_runs, label_runs
    from umni.reporting.paired import compare_runs

    strong = tmp_path / "strong"
    assert main(["run", "umnibench", "--model", "sim/umm", "--limit", "6", "--out", str(strong), "--cache", str(tmp_path / "cache"), "--quiet"]) == 0
    a, b = label_runs(find_runs([strong, small_run]))
    result = compare_runs(a, b)
    assert result.cases == 6 and result.a_only == result.b_only == 0
    assert result.difference == pytest.approx(a.summary.scores["overall"] - b.summary.scores["overall"], abs=1e-3)
    assert result.ci is not None and result.ci[0] <= result.difference <= result.ci[1]
    assert 0 < result.p_value <= 1
    assert compare_runs(a, b) == result  # seeded
    same = compare_runs(a, a)
    assert same.difference == 0 and same.ci == (0.0, 0.0) and same.p_value == 1.0
    assert main(["leaderboard", str(strong), str(small_run), "--paired"]) == 0
    assert "(paired permutation test, all 64 swaps)" in capsys.readouterr().out


PAPER = json.loads((Path(__file__).parent / "fixtures" / "paper_tables.json").read_text())


def test_wise_table_has_the_papers_columns_and_rounding():
    paper = PAPER["wise"]
    values = dict(zip(["culture", "time", "space", "biology", "physics", "chemistry", "overall"], map(float, paper["paper_row"]["cells"])))
    wise = values | {"metric": "wiscore", "scored": 6, "failed": 0, "scored_by_category": {k: 1 for k in values if k != "overall"}}
    table = build_tables([summary("wise", wise)])[0]
    assert table.title.startswith(paper["title"])
    assert table.columns == paper["columns"]
    assert [c.text().split(" ")[0] for c in table.rows[0].cells] == paper["paper_row"]["cells"]


def test_girbench_t2i_and_edit_table_in_the_papers_layout():
    paper = PAPER["girbench_t2i_edit"]
    edit = paper["paper_row"]["edit"]
    gir = {"overall": 0.1, "overall_of": list(edit),
           "metrics": {k: {"score": v, "cases": 10, "scored": 10} for k, v in edit.items()}}
    tables = [t for t in build_tables([summary("girbench", gir)]) if t.title.startswith(paper["title"])]
    assert len(tables) == 1
    table = tables[0]
    assert table.columns == paper["columns"]
    assert table.groups == paper["groups"]
    cells = [c.text().split(" ")[0] for c in table.rows[0].cells]
    assert cells[:4] == ["—"] * 4  # the run made no T2I task: a dash, as the paper prints "-"
    assert cells[4:] == ["0.044", "0.000", "0.271", paper["paper_row"]["edit_overall"]]


def test_aegis_main_table_in_the_papers_layout():
    paper = PAPER["aegis"]
    cells = list(map(float, paper["paper_row"]["cells"]))
    tasks, groups = ["understanding", "generation", "editing", "interleaved"], ["STEM", "Humanities", "Daily life"]
    main_table = {t: dict(zip(groups, cells[3 * i:3 * i + 3])) | {"overall": None, "scored": 10} for i, t in enumerate(tasks)}
    main_table["overall"] = {"overall": cells[-1], "scored": 40}
    table = build_tables([summary("aegis", {"overall": cells[-1], "main_table": main_table})])[0]
    assert table.title.startswith(paper["title"])
    assert table.columns == paper["columns"] and table.groups == paper["groups"]
    assert len(table.rows) == 1  # one row per model
    assert [c.text().split(" ")[0] for c in table.rows[0].cells] == paper["paper_row"]["cells"]


def _printed(cell):
    """What the paper would print: the figure alone (interval and coverage left out)."""
    return cell.text().split(" ")[0]


def test_umnibench_question_table_in_the_papers_layout():
    """Table 2: Q1–Q9 as rows grouped by stage, each stage closed by its Ave., the overall last; runs as columns."""
    paper = PAPER["umnibench_questions"]
    col = paper["paper_column"]
    scores = {"overall": col["overall"], "stages": col["stages"], "questions": col["questions"], "domains": {},
              "answered": {q: 10 for q in col["questions"]}, "failed": {q: 0 for q in col["questions"]}}
    weaker = json.loads(json.dumps(scores)) | {"overall": 50.0}
    table = build_tables([summary("umnibench", weaker, bindings={"generate": "m/b"}), summary("umnibench", scores)])[0]
    assert table.title.startswith(paper["title"]) and table.run_columns
    assert table.key_columns == paper["key_columns"]
    assert table.columns == ["m/a", "m/b"]  # the runs, best overall first
    assert [r.keys for r in table.rows[:-2]] == paper["rows"]
    assert [r.keys[0] for r in table.rows[-2:]] == ["coverage", "failures"]
    assert [_printed(r.cells[0]) for r in table.rows[:-2]] == col["cells"]
    md = table.markdown()
    md_tables_are_valid(md)
    stage_column = [line.split(" | ")[0].lstrip("| ") for line in md.splitlines()[4:4 + len(paper["rows"])]]
    assert stage_column == paper["printed_stage_column"]  # a stage named once, on its first row
    assert "\\begin{tabular}{llrr}" in table.latex()


def test_umnibench_domain_table_in_the_papers_layout():
    """Table 3: domains as rows (lowest Average first), runs as columns, an Average column, the overall last."""
    paper = PAPER["umnibench_domains"]
    col = paper["paper_column"]
    names = [n.replace("Weather & Environ.", "Weather & Environment") for n in paper["rows"][:-1]]  # the cases' own domain name
    average = [float(v) for v in paper["average_column"][:-1]]
    first = dict(zip(names, map(float, col["cells"])))
    # a second run chosen so that the two runs' mean is the paper's Average column
    second = {d: round(2 * a - first[d], 2) for d, a in zip(names, average)}
    runs = [summary("umnibench", {"overall": col["overall"], "stages": {}, "questions": {}, "answered": {}, "failed": {}, "domains": first}),
            summary("umnibench", {"overall": 70.0, "stages": {}, "questions": {}, "answered": {}, "failed": {}, "domains": second},
                    bindings={"generate": "m/b"})]
    table = build_tables(runs)[1]
    assert table.title.startswith(paper["title"]) and table.run_columns
    assert table.key_columns == paper["key_columns"] and table.columns == ["m/a", "m/b", paper["last_column"]]
    assert [r.keys[0] for r in table.rows[:-2]] == paper["rows"]
    assert [_printed(r.cells[0]) for r in table.rows[:-2]] == col["cells"]
    assert [_printed(r.cells[-1]) for r in table.rows[:-2]] == [v.replace("-", "–") for v in paper["average_column"]]


def test_umnibench_domain_cells_show_their_coverage_and_mark_incomplete():
    scores = json.loads(json.dumps(UMNI)) | {"domain_answered": {"Plant": 9, "Spatial": 7}, "domain_failed": {"Plant": 0, "Spatial": 2}}
    for layout, index in (("paper", 1), ("tidy", 2)):
        table = build_tables([summary("umnibench", scores)], layout=layout)[index]
        texts = {r.keys[0]: r.cells[0].text() for r in table.rows} if layout == "paper" else dict(zip(table.columns, (c.text() for c in table.rows[0].cells)))
        assert texts["Plant"] == "40.00 (9/9)" and texts["Spatial"] == "60.00 (7/9)*"


def test_umnibench_summary_counts_answers_per_domain(small_run):
    scores = json.loads((small_run / "summary.json").read_text())["scores"]
    assert set(scores["domain_answered"]) == set(scores["domains"]) == set(scores["domain_failed"])
    assert sum(scores["domain_answered"].values()) + sum(scores["domain_failed"].values()) == 6 * 9


def test_genius_main_table_in_the_papers_layout():
    paper = PAPER["genius"]
    values = paper["paper_row"]["cells"]
    dims = ["implicit_pattern", "symbolic_constraint", "visual_constraint", "prior_conflicting", "multi_semantic"]
    dimensions = {}
    for i, dim in enumerate(dims):
        rc, vc, aq = values[2 + 3 * i: 5 + 3 * i]
        applies_vc = vc != "-"
        dimensions[dim] = {"items": 10, "cases": 10, "missing_outputs": 0, "rc": float(rc), "vc": float(vc) if applies_vc else None, "aq": float(aq),
                           "scored": {"rc": 10, "vc": 10 if applies_vc else 0, "aq": 10}, "applicable": {"rc": 10, "vc": 10 if applies_vc else 0, "aq": 10},
                           "judge_failures": {}}
    scores = {"overall": float(values[1]), "rc": 50.0, "vc": 50.0, "aq": 50.0, "cases": 50, "complete": 50, "input_format": "interleaved",
              "scored": {"rc": 50, "vc": 40, "aq": 50}, "applicable": {"rc": 50, "vc": 40, "aq": 50},
              "judge_failures": {"rc": {}, "vc": {}, "aq": {}}, "unscored": {}, "dimensions": dimensions}
    table = build_tables([summary("genius", scores)])[0]
    assert table.title.startswith(paper["title"])
    assert table.columns == paper["columns"] and table.groups == paper["groups"] and table.supergroups == paper["supergroups"]
    assert [_printed(c) for c in table.rows[0].cells] == [v.replace("-", "–") for v in values]
    assert not any(c.incomplete for c in table.rows[0].cells)
    tex = table.latex()
    assert "\\multicolumn{6}{c}{Ad-hoc Constraint Execution}" in tex and "\\multicolumn{3}{c}{Multi-Semantic}" in tex


def test_genius_vc_that_does_not_apply_is_not_missing():
    """Multi-Semantic has no VC: a run with no failure must not read incomplete ((8/10)* before)."""
    written = json.loads((Path(__file__).parents[1] / "golden" / "expected" / "genius" / "summary.json").read_text())
    golden = Summary.model_validate(written | {"wall_seconds": 0.0})  # the golden file blanks the run's own fields
    s = golden.scores
    assert s["scored"]["vc"] < s["cases"] and not any(s["judge_failures"][m] for m in ("rc", "vc", "aq"))
    for layout in ("paper", "tidy"):
        for table in build_tables([golden], with_ci=False, layout=layout):
            for row in table.rows:
                assert not any(c.incomplete for c in row.cells), (table.title, [c.text() for c in row.cells])
    paper = build_tables([golden], with_ci=False)[0]
    multi_vc = paper.rows[0].cells[paper.columns.index("Overall") + 14]
    assert not multi_vc.applies and multi_vc.text() == "–"
    assert "`–` the metric does not apply" in paper.markdown()


def test_intervals_on_every_cell_with_enough_items(small_run):
    """Not only Overall: each question and stage gets its interval; a domain resting on fewer than
    MIN_INTERVAL_CASES cases gets none (the 6-case run has one case per domain)."""
    run = Run(RunFolder(small_run).read_summary(), small_run, intervals=None)
    run.intervals = None
    questions, domains = build_tables([run])
    for row in questions.rows[:-2]:
        cell = row.cells[0]
        assert cell.ci is not None and cell.ci[0] <= cell.value <= cell.ci[1], row.keys
    for row in domains.rows[:-3]:
        assert row.cells[0].value is not None and row.cells[0].ci is None, row.keys
    assert domains.rows[-3].keys == ["Average"] and domains.rows[-3].cells[0].ci is not None  # the overall
    assert "[" in questions.markdown().splitlines()[4] and "ci_low" in questions.csv()


def test_tables_json_stores_an_interval_per_score(small_run):
    stored = json.loads((small_run / "tables.json").read_text())
    assert {"overall", "questions/Q1", "stages/generation"} <= {k for k, v in stored["intervals"].items() if v}
    cells = [c for t in stored["tables"] for r in t["rows"] for c in r["cells"] if c["value"] is not None and not c["coverage_only"]]
    assert sum(bool(c["ci"]) for c in cells) > len(cells) // 2


def test_leaderboard_layout_option(small_run, tmp_path, capsys):
    assert main(["leaderboard", str(small_run), "--out", str(tmp_path / "paper")]) == 0
    assert "UmniBench · questions by stage (paper Table 2)" in (tmp_path / "paper" / "leaderboard.md").read_text()
    assert main(["leaderboard", str(small_run), "--layout", "tidy", "--out", str(tmp_path / "tidy")]) == 0
    assert "UmniBench · overall and stages" in (tmp_path / "tidy" / "leaderboard.md").read_text()
    # leaderboard.csv is the tidy long CSV in both
    assert (tmp_path / "paper" / "leaderboard.csv").read_text() == (tmp_path / "tidy" / "leaderboard.csv").read_text()
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["leaderboard", str(small_run), "--layout", "sideways"])


def test_girbench_uni_table_in_the_papers_layout():
    """The paper's Table 1: understanding and generation, each by Zoology, Botany, Geography and Overall."""
    paper = PAPER["girbench_uni"]
    row = paper["paper_row"]
    gir = {"overall": 0.6, "overall_of": ["uni_understanding", "uni_generation"],
           "uni": {"understanding": row["understanding"], "generation": row["generation"]},
           "metrics": {"uni_understanding": {"score": row["understanding"]["overall"], "cases": 30, "scored": 30},
                       "uni_generation": {"score": row["generation"]["overall"], "cases": 30, "scored": 30}}}
    tables = [t for t in build_tables([summary("girbench", gir)]) if t.title.startswith(paper["title"])]
    assert len(tables) == 1
    table = tables[0]
    assert table.columns == paper["columns"] and table.groups == paper["groups"]
    assert [_printed(c) for c in table.rows[0].cells] == row["cells"]
    tidy = [t.title for t in build_tables([summary("girbench", gir)], layout="tidy")]
    assert not any(t.startswith(paper["title"]) for t in tidy)
