"""What a run computed and what it took from the store, per role: `umni run` prints it under its
counts, and summary.json keeps it (``this_invocation.nodes``), so rebinding one role shows that
only the nodes depending on it were computed again (issue 31 item 3: the output said how many
nodes were computed and cached, not which)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from umni.cli import main


def run(tmp_path: Path, capsys: pytest.CaptureFixture[str], out: str, *args: str) -> tuple[str, dict]:
    argv = ["run", "genius", "--model", "sim/umm", *args, "--limit", "2",
            "--out", str(tmp_path / out), "--cache", str(tmp_path / "cache"), "--quiet"]
    assert main(argv) == 0
    printed = capsys.readouterr().out.splitlines()
    line = next(line for line in printed if line.startswith("nodes by role: "))
    assert printed.index(line) == 1, "right under the counts"
    return line, json.loads((tmp_path / out / "summary.json").read_text())["this_invocation"]["nodes"]


def test_rebinding_the_judge_shows_only_judge_nodes_computed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line, nodes = run(tmp_path, capsys, "first")
    assert nodes == {"compute": {"computed": 2}, "generate": {"computed": 2}, "judge": {"computed": 20}}
    assert line == "nodes by role: compute 2 computed; generate 2 computed; judge 20 computed"

    line, nodes = run(tmp_path, capsys, "rejudged", "--role", "judge=sim/umm?skill=0.5")
    assert nodes == {"compute": {"cached": 2}, "generate": {"cached": 2}, "judge": {"computed": 17, "skipped": 3}}
    assert line == "nodes by role: compute 2 cached; generate 2 cached; judge 17 computed, 3 skipped"


def test_a_resume_of_a_finished_run_ran_nothing_and_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(tmp_path, capsys, "first")
    line, nodes = run(tmp_path, capsys, "first")
    assert nodes == {}
    assert line == "nodes by role: none run (every case was finished by an earlier invocation)"


def test_failed_nodes_are_counted_under_their_role(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line, nodes = run(tmp_path, capsys, "broken", "--role", "judge=sim/umm?error_rate=1", "--max-attempts", "1")
    assert nodes["judge"]["failed"] > 0 and "computed" not in nodes["judge"] and nodes["generate"] == {"computed": 2}
    assert f"judge {nodes['judge']['failed']} failed" in line
