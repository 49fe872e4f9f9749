"""A sweep with two understanders over one generator: images made once, leaderboard and report."""

import json
import re
from pathlib import Path

from umni.cli import main


def test_sweep_shares_images_and_writes_leaderboard_and_report(tmp_path, capsys):
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(
        f"""
name: t
out: {tmp_path / 'sweep'}
cache: {tmp_path / 'cache'}
protocols: [umnibench]
models: [sim/umm]
roles:
  - {{}}
  - {{understand: "sim/umm?skill=0.4"}}
limit: 5
"""
    )
    assert main(["sweep", str(sweep)]) == 0
    out = tmp_path / "sweep"
    runs = json.loads((out / "sweep.json").read_text())["runs"]
    assert len(runs) == 2
    calls = [json.loads((Path(r["out"]) / "summary.json").read_text())["calls"] for r in runs]
    generate_edit = [c.get("generate", 0) + c.get("edit", 0) for c in calls]
    assert sorted(generate_edit) == [0, 15]  # 5 generates + 10 edits, once, for the first binding only
    assert all(c["understand"] == 45 for c in calls)
    board = (out / "leaderboard.md").read_text()
    assert "sim/umm?skill=0.4" in board and "questions by stage" in board and "domains" in board  # the paper layout
    assert (out / "leaderboard.csv").exists() and json.loads((out / "leaderboard.json").read_text())
    html = (out / "report.html").read_text()
    refs = re.findall(r'(?:src|href)="([^"#]+)"', html)
    assert any(r.startswith("images/") for r in refs) and any(r.startswith("plots/") for r in refs)
    assert all((out / r).exists() for r in refs)

    # re-running with a model added runs only the new work
    sweep.write_text(sweep.read_text().replace("models: [sim/umm]", 'models: [sim/umm, "sim/umm?seed=3"]'))
    assert main(["sweep", str(sweep)]) == 0
    runs = json.loads((out / "sweep.json").read_text())["runs"]
    assert len(runs) == 4
    summaries = [json.loads((Path(r["out"]) / "summary.json").read_text()) for r in runs]
    old = [s for s in summaries if "seed=3" not in json.dumps(s["bindings"])]
    assert all(s["counts"]["computed"] == 0 for s in old)


def test_leaderboard_command(tmp_path, capsys):
    for skill in ("1", "0.3"):
        assert main(["run", "umnibench", "--model", f"sim/umm?skill={skill}", "--limit", "3", "--out", str(tmp_path / skill),
                     "--cache", str(tmp_path / "cache"), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["leaderboard", str(tmp_path / "1"), str(tmp_path / "0.3")]) == 0
    text = capsys.readouterr().out
    assert "| Stage | Question | sim/umm?skill=1 | sim/umm?skill=0.3 |" in text  # the paper's Table 2: the runs as columns
    assert main(["leaderboard", str(tmp_path / "1"), str(tmp_path / "0.3"), "--layout", "tidy"]) == 0
    text = capsys.readouterr().out
    assert "sim/umm?skill=0.3" in text and "| run | Overall | Generation | Interaction | Counterfactual | coverage | failures |" in text
    assert main(["leaderboard", str(tmp_path / "1"), str(tmp_path / "0.3"), "--out", str(tmp_path / "lb")]) == 0
    assert (tmp_path / "lb" / "leaderboard.csv").read_text().count("sim/umm") >= 2


def test_agree_two_runs_cli(tmp_path, capsys):
    for skill in ("1", "0.3"):
        main(["run", "umnibench", "--model", f"sim/umm?skill={skill}", "--limit", "4", "--out", str(tmp_path / skill),
              "--cache", str(tmp_path / "cache"), "--quiet"])
    capsys.readouterr()
    assert main(["agree", str(tmp_path / "1"), str(tmp_path / "0.3")]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["metrics"]["accuracy"]["n"] == 4
