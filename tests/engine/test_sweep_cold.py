"""A cold sweep of several protocols sharing concurrency lanes finishes (issue 10.6): the lanes'
tie-break counter is shared by every runner of the pool, so the heap never compares two tasks."""

from __future__ import annotations

import json
from pathlib import Path

from umni.cli import main


def test_cold_multi_protocol_sweep_with_shared_concurrency_finishes(tmp_path, capsys):
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(
        "protocols: [umnibench, genius]\n"
        'models: ["sim/umm?latency=0.01"]\n'
        "roles: [{}, {understand: \"sim/umm?skill=0.5&latency=0.01\"}]\n"
        "seeds: [0, 1]\n"
        "limit: 2\n"
        "concurrency: 4\n"
        "max_attempts: 2\n"
        f"out: {tmp_path / 'out'}\n"
        f"cache: {tmp_path / 'cache'}\n"
    )
    assert main(["sweep", str(sweep)]) == 0, capsys.readouterr().err
    runs = json.loads((tmp_path / "out" / "sweep.json").read_text())["runs"]
    assert len(runs) == 8
    assert (tmp_path / "out" / "leaderboard.md").exists()
    run_json = next((tmp_path / "out").glob("*/*/run.json"))
    assert json.loads(run_json.read_text())["config"]["max_attempts"] == 2  # sweeps can set retries


def test_a_crashed_sweep_still_writes_the_leaderboard_of_what_finished(tmp_path, capsys):
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(
        "protocols: [umnibench]\n"
        'models: ["sim/umm", "sim/umm?skill=0.4"]\n'
        "limit: 1\n"
        f"out: {tmp_path / 'out'}\n"
        f"cache: {tmp_path / 'cache'}\n"
    )
    assert main(["sweep", str(sweep)]) == 0
    runs = json.loads((tmp_path / "out" / "sweep.json").read_text())["runs"]
    broken = next(r for r in runs if "skill" in r["bindings"]["generate"])
    (tmp_path / "out" / "leaderboard.md").unlink()
    # the second run cannot write its report (a folder is in the way): the sweep stops with an error
    (Path(broken["out"]) / "report.html").unlink()
    (Path(broken["out"]) / "report.html").mkdir()
    assert main(["sweep", str(sweep)]) != 0
    board = (tmp_path / "out" / "leaderboard.md").read_text()
    assert "sim/umm" in board and "skill=0.4" not in board
