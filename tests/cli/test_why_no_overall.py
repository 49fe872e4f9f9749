"""When a run's headline (`overall`) is empty, `umni run` says why on the `overall:` line, and
summary.json keeps the reason (`why_no_overall`): each protocol knows what its Overall needs
(`Protocol.why_no_overall`), the run adds what it knows of its cases (`--limit`, `--shard`) and
the reasons no protocol need give (no case ran, every node failed). Issue 31 item 8: `umni run wise
--limit 8` printed `overall: —` with no reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from umni.cli import main

#: a backend whose every call fails at once (error_rate is operational: a fresh store per test)
BROKEN = "sim/umm?error_rate=1"


def run(tmp_path: Path, capsys: pytest.CaptureFixture[str], protocol: str, *args: str, folder: str = "run") -> tuple[str, dict]:
    out = tmp_path / "run"
    argv = ["run", protocol, "--model", "sim/umm", *args, "--out", str(out), "--cache", str(tmp_path / "cache"),
            "--max-attempts", "1", "--quiet"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    line = next(line for line in printed.splitlines() if line.startswith("overall: "))
    return line, json.loads((tmp_path / folder / "summary.json").read_text())


def test_wise_names_the_empty_categories_and_what_the_limit_took(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line, summary = run(tmp_path, capsys, "wise", "--limit", "8")
    reason = "no cases in biology, physics, chemistry: --limit 8 takes the first 8 of 18 bundled cases"
    assert line == f"overall: — (16/16 nodes answered); {reason}"
    assert summary["why_no_overall"] == reason


def test_wise_names_a_category_whose_every_case_failed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line, summary = run(tmp_path, capsys, "wise", "--limit", "3", "--role", f"judge={BROKEN}")
    assert summary["why_no_overall"] == (
        "every case failed in culture; no cases in time, space, biology, physics, chemistry: "
        "--limit 3 takes the first 3 of 18 bundled cases"
    )
    assert line.endswith(summary["why_no_overall"]) and "*" not in line  # no coverage mark on an empty score


def test_umnibench_says_no_question_was_answered(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, summary = run(tmp_path, capsys, "umnibench", "--limit", "2", "--role", f"understand={BROKEN}")
    assert summary["why_no_overall"] == (
        "none of the 18 questions was answered (18 failed): --limit 2 takes the first 2 of 26 bundled cases"
    )


def test_genius_names_the_metrics_with_no_score(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, summary = run(tmp_path, capsys, "genius", "--limit", "3", "--role", f"judge={BROKEN}")
    assert summary["why_no_overall"].startswith("no case was scored on RC, VC, AQ (judge failures: backend ")


def test_aegis_says_no_case_was_scored(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, summary = run(tmp_path, capsys, "aegis", "--limit", "3", "--role", f"judge={BROKEN}")
    assert summary["why_no_overall"] == (
        "no case was scored (0 inference failures, 3 evaluation failures): --limit 3 takes the first 3 of 8 bundled cases"
    )


def test_girbench_names_each_metric_and_why_it_has_no_score() -> None:
    from umni.protocols.protocol import get_protocol

    girbench = get_protocol("girbench")
    options = girbench.parse_options({"tasks": "uni", "features": "embed"})
    assert girbench.why_no_overall(girbench.summarize([], options), options) == (
        "no metric has a score (no cases: Uni · image understanding, Uni · image generation; "
        "not selected (--option tasks): 6 metrics)"
    )


def test_every_node_failed_is_said_as_such(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line, summary = run(tmp_path, capsys, "wise", "--limit", "2", "--role", f"generate={BROKEN}")
    assert summary["why_no_overall"] == "every node failed or was blocked (see failures)"
    assert line == f"overall: — (0/4 nodes answered); {summary['why_no_overall']}"


def test_a_run_with_an_overall_gives_no_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line, summary = run(tmp_path, capsys, "wise")
    assert line == "overall: 1.00 (36/36 nodes answered)"
    assert "why_no_overall" not in summary


def test_a_shard_says_what_it_holds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, summary = run(tmp_path, capsys, "wise", "--shard", "1/3", folder="run-shard1of3")
    assert summary["why_no_overall"] == "no cases in culture, chemistry: --shard 1/3 holds 5 of 18 bundled cases"


def test_a_shard_with_no_case_says_no_case_was_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line, summary = run(tmp_path, capsys, "umnibench", "--limit", "1", "--shard", "1/2", folder="run-shard1of2")
    assert summary["why_no_overall"] == "no case was run: --limit 1 takes the first 1 of 26 bundled cases and --shard 1/2 holds 0 of them"
    assert line == f"overall: — (0/0 nodes answered); {summary['why_no_overall']}"
