"""`umni run --label` and `umni leaderboard --compare-paper`: a run labelled as one of its paper's
models set beside the paper's row (the paper's value, this run's, the difference, in one unit),
with the settings of the paper's run that differ from this run's; a label the paper does not know
and a run of another metric each get one line."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from umni.cli import main
from umni.run.sweep_file import expand, load_sweep
from umni.util.errors import InputError


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("compare")

    def run(protocol: str, label: str | None, *extra: str) -> Path:
        out = root / f"{protocol}-{label}-{len(extra)}"
        argv = ["run", protocol, "--model", "sim/umm?skill=0.7", "--out", str(out), "--cache", str(root / "cache"), "--quiet", "--limit", "12", *extra]
        assert main(argv + (["--label", label] if label else [])) == 0
        return out

    return {
        "umnibench": run("umnibench", "Unified/ovis-u1-3b"),  # an alias under a --group prefix
        "wise legacy": run("wise", "gpt-4o", "--option", "scoring=legacy"),
        "wise verified": run("wise", "GPT4o"),
        "wise unknown": run("wise", "My Model"),
        "wise unlabelled": run("wise", None, "--seed", "3"),
    }


def test_label_is_written_to_summary_json(runs):
    summary = json.loads((runs["umnibench"] / "summary.json").read_text())
    assert summary["label"] == "Unified/ovis-u1-3b"
    assert "label" not in json.loads((runs["wise unlabelled"] / "summary.json").read_text())


def test_a_resume_without_label_keeps_the_runs_label(tmp_path):
    argv = ["run", "wise", "--model", "sim/umm", "--out", str(tmp_path / "r"), "--cache", str(tmp_path / "cache"), "--quiet", "--limit"]
    assert main([*argv, "2", "--label", "GPT4o"]) == 0
    assert main([*argv, "3"]) == 0  # extended to 3 cases, no --label
    assert json.loads((tmp_path / "r" / "summary.json").read_text())["label"] == "GPT4o"
    assert main([*argv, "3", "--label", "Emu3"]) == 0  # a new label replaces it
    assert json.loads((tmp_path / "r" / "summary.json").read_text())["label"] == "Emu3"


def test_an_empty_label_is_refused(tmp_path, capsys):
    assert main(["run", "wise", "--model", "sim/umm", "--label", " ", "--out", str(tmp_path / "r"), "--quiet"]) == 2
    assert "--label must name the run" in capsys.readouterr().err


def test_a_labelled_run_is_set_beside_the_papers_row(runs, capsys, tmp_path):
    assert main(["leaderboard", str(runs["umnibench"]), "--compare-paper", "--format", "csv"]) == 0
    (tmp_path / "tables.csv").write_text(capsys.readouterr().out)
    frame = pd.read_csv(tmp_path / "tables.csv")
    overall = json.loads((runs["umnibench"] / "summary.json").read_text())["scores"]["overall"]
    titles = {"Table 2": "Unified/ovis-u1-3b beside the paper: Table 2 (questions by stage), Ovis-U1",
              "Table 3": "Unified/ovis-u1-3b beside the paper: Table 3 (domains), Ovis-U1"}
    # Table 2's last row and Table 3's Average are Ovis-U1's overall: 77.45 in the paper
    for title in titles.values():
        row = frame[(frame["table"] == title) & (frame["score"] == "overall")]
        assert len(row) == 1, title
        assert row["paper"].item() == 77.45
        assert row["this run"].item() == pytest.approx(overall)
        assert row["difference"].item() == pytest.approx(overall - 77.45)
    # Q1 is compared with the paper's value for Ovis-U1 (Table 2's second column), and no column
    # the paper leaves without a value for it is listed
    q1 = frame[(frame["table"] == titles["Table 2"]) & (frame["score"] == "questions/Q1")]
    assert q1["paper's column"].item() == "Q1" and q1["paper"].item() == 98.50
    assert len(frame[frame["table"] == titles["Table 2"]]) == 13


def test_the_note_names_the_settings_that_differ(runs, capsys):
    assert main(["leaderboard", str(runs["wise legacy"]), "--compare-paper", "--plain"]) == 0
    out = capsys.readouterr().out
    assert "### gpt-4o beside the paper: Table 1 (WiScore by category), GPT4o" in out
    assert "| culture | Cultural | 0.81 |" in out  # the paper's GPT4o row, in umni's 0-1 unit
    assert "| overall |" not in out  # 12 prompts leave categories unscored: no Overall to compare
    assert "settings that differ from the paper's run: judge: the paper's GPT-4o, this run's sim/umm" in out
    assert "the paper does not state its sampling, seed and resolution" in out


def test_a_run_of_another_metric_or_an_unknown_label_gets_one_line(runs, capsys):
    dirs = [runs["wise verified"], runs["wise unknown"], runs["wise unlabelled"]]
    assert main(["leaderboard", *map(str, dirs), "--compare-paper"]) == 0
    captured = capsys.readouterr()
    assert "beside the paper" not in captured.out
    lines = captured.err.splitlines()
    assert "GPT4o: not compared with Table 1 (WiScore by category): scoring: the paper's legacy, this run's verified (another metric)" in lines
    unknown = [line for line in lines if line.startswith("My Model:")]
    assert len(unknown) == 1 and "no model of the wise paper is called 'My Model'; the paper's models: FLUX.1-dev," in unknown[0]
    assert "vila-u-7b-256" in unknown[0]
    assert any(line.startswith("sim/umm?skill=0.7: no label;") for line in lines)


def test_a_sweep_labels_each_models_runs(tmp_path):
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump({"protocols": ["wise"], "models": ["sim/umm", "sim/umm?skill=0.5"], "labels": {"sim/umm": "GPT4o"}}))
    requests = expand(load_sweep(path))
    assert [r.label for r in requests] == ["GPT4o", None]
    path.write_text(yaml.safe_dump({"protocols": ["wise"], "models": ["sim/umm"], "labels": {"sim/um": "GPT4o"}}))
    with pytest.raises(InputError, match="'sim/um': not a spec listed under `models:`"):
        load_sweep(path)


def test_the_judge_the_provenance_names_is_compared_with_the_papers(runs, tmp_path, capsys):
    """A run whose provenance says its judge served gpt-4o-2024-08-06 used the paper's GPT-4o: no
    setting is known to differ, and the settings the paper leaves unstated are this run's."""
    source, copy = runs["wise legacy"], tmp_path / "served"
    copy.mkdir()
    for name in ("results.jsonl", "tables.json"):
        (copy / name).write_bytes((source / name).read_bytes())
    provenance = {"umni_version": "0", "protocol": "wise", "roles": {
        "judge": {"model": "judge-alias", "reported_id": "gpt-4o-2024-08-06", "sampling": {"temperature": 0.0, "max_tokens": 512}, "seed_policy": "run seed"},
        "generate": {"model": "my/model", "sampling": {"steps": 28, "guidance": 4.0}}}}
    summary = json.loads((source / "summary.json").read_text()) | {"provenance": provenance}
    (copy / "summary.json").write_text(json.dumps(summary))
    assert main(["leaderboard", str(copy), "--compare-paper", "--plain"]) == 0
    out = capsys.readouterr().out
    assert "settings that differ from the paper's run: none known" in out
    assert ("the paper does not state its sampling, seed and resolution: this run's: generate steps 28, guidance 4.0; "
            "judge temperature 0.0, max_tokens 512, seed run seed") in out


def test_a_run_that_binds_another_understander_differs_from_umnibenchs_unified_runs(runs, tmp_path, capsys):
    out = tmp_path / "mixed"
    assert main(["run", "umnibench", "--model", "sim/umm?skill=0.7", "--role", "understand=sim/umm?skill=0.2", "--label", "Bagel",
                 "--limit", "3", "--out", str(out), "--cache", str(tmp_path / "cache"), "--quiet"]) == 0
    assert main(["leaderboard", str(out), str(runs["umnibench"]), "--compare-paper", "--plain"]) == 0
    notes = [line for line in capsys.readouterr().out.splitlines() if line.startswith("difference = ")]
    assert len(notes) == 4  # two runs, each beside Tables 2 and 3
    mixed = ("roles: the paper's model fills generate, edit and understand itself, this run binds "
             "generate=sim/umm?skill=0.7, edit=sim/umm?skill=0.7, understand=sim/umm?skill=0.2")
    assert sum(mixed in note for note in notes) == 2
    assert sum("settings that differ from the paper's run: none known" in note for note in notes) == 2


@pytest.mark.parametrize(("paper", "run", "same"), [
    ("GPT-4o", "openai/gpt-4o-2024-08-06", True),
    ("GPT-4o", "gpt-4o", True),
    ("GPT-4o", "openai/gpt-4o-mini", False),
    ("Gemini-3-Pro", "gemini-3-pro-preview", True),
    ("Qwen2.5-VL-72B", "openai/Qwen/Qwen2.5-VL-72B-Instruct?base_url=http://h:8000/v1", True),
    ("Qwen2.5-VL-72B", "Qwen/Qwen2.5-VL-7B-Instruct", False),
    ("InternVL3.5-38B", "OpenGVLab/InternVL3_5-38B", True),
    ("Gemini-2.5-Pro", "sim/umm", False),
    ("GPT-4o", None, False),
])
def test_a_run_model_id_names_the_papers_model_only_up_to_a_date_or_variant_tag(paper, run, same):
    from umni.reporting.paper_compare import same_model

    assert same_model(paper, run) is same
