"""RunConfig (issue 10.4, 10.7): run options validated in one place; run.json keeps what the user set,
and a rejudge replays exactly that."""

from __future__ import annotations

import json

import pytest

from umni.cli import main
from umni.run.config import RunConfig
from umni.store.runfolder import RunFolder


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--limit", "0", "--limit must be at least 1"),
        ("--limit", "-1", "--limit must be at least 1"),
        ("--concurrency", "0", "--concurrency must be at least 1"),
        ("--max-attempts", "0", "--max-attempts must be at least 1"),
        ("--retry-budget", "0", "--retry-budget must be a positive"),
        ("--retry-budget", "-3", "--retry-budget must be a positive"),
    ],
)
def test_invalid_run_options_are_refused_before_anything_runs(tmp_path, capsys, flag, value, message):
    out = tmp_path / "run"
    code = main(["run", "umnibench", "--model", "sim/umm", "--out", str(out), "--cache", str(tmp_path / "c"), "--quiet", flag, value])
    assert code == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_run_json_keeps_only_what_the_user_set(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", "aegis", "--model", "sim/umm", "--limit", "2", "--out", str(out), "--cache", str(tmp_path / "c"), "--quiet"]) == 0
    config = json.loads((out / "run.json").read_text())["config"]
    assert set(config) == {"protocol", "model", "limit", "cache"}
    assert RunConfig.replay(config).persisted() == config


def test_rejudge_of_a_default_aegis_run_replays_it_exactly(tmp_path, capsys):
    run, cache = tmp_path / "run", tmp_path / "cache"
    assert main(["run", "aegis", "--model", "sim/umm", "--limit", "3", "--out", str(run), "--cache", str(cache), "--quiet"]) == 0
    new = tmp_path / "rejudged"
    assert main(["rejudge", str(run), "--role", "judge=sim/umm?skill=0.3", "--out", str(new)]) == 0, capsys.readouterr().err
    summary = RunFolder(new).read_summary()
    assert set(summary.calls) <= {"judge"}
    assert summary.counts.failed == 0 and summary.counts.blocked == 0


def test_rejudge_refuses_a_protocol_without_a_judge(tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["run", "umnibench", "--model", "sim/umm", "--limit", "1", "--out", str(run), "--cache", str(tmp_path / "c"), "--quiet"]) == 0
    assert main(["rejudge", str(run), "--role", "judge=sim/umm"]) == 2
    assert "no judge" in capsys.readouterr().err


def test_rejudge_of_a_genius_run_with_reflection_replays_its_rounds(tmp_path, capsys):
    """The critic that steers reflection keeps the original judge's binding: re-scoring with another
    judge re-scores every round that exists and needs no new generation (issue 10.4)."""
    run, cache = tmp_path / "run", tmp_path / "cache"
    args = ["run", "genius", "--model", "sim/umm", "--limit", "4", "--out", run, "--cache", cache, "--quiet",
            "--option", "reflection_rounds=2", "--option", "critic=self"]
    assert main([str(a) for a in args]) == 0
    new = tmp_path / "rejudged"
    assert main(["rejudge", str(run), "--role", "judge=sim/umm?skill=0.2", "--out", str(new)]) == 0, capsys.readouterr().err
    summary = RunFolder(new).read_summary()
    assert set(summary.this_invocation.calls) == {"judge"}
    assert summary.counts.failed == 0 and summary.counts.blocked == 0
    before = json.loads((run / "summary.json").read_text())["scores"]["reflection"]["rounds_run"]
    assert summary.scores["reflection"]["rounds_run"] == before


def test_a_sweep_entry_is_validated_like_the_command_line(tmp_path, capsys):
    sweep = tmp_path / "s.yaml"
    sweep.write_text(f"protocols: [umnibench]\nmodels: [sim/umm]\nlimit: 0\nout: {tmp_path / 'out'}\n")
    assert main(["sweep", str(sweep)]) == 2
    assert "--limit must be at least 1" in capsys.readouterr().err
