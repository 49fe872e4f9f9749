"""`umni` end to end on the bundled UmniBench cases with the offline reference backend."""

import json
import re

import pytest

from umni.cli import main
from umni.store.runfolder import RunFolder


def run_cli(*args: str) -> int:
    return main(list(args))


@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("cli")
    out, cache = base / "run", base / "cache"
    code = run_cli("run", "umnibench", "--model", "sim/umm", "--out", str(out), "--cache", str(cache), "--quiet")
    return code, out, cache


def test_run_writes_summary_results_events_and_report(first_run):
    code, out, _ = first_run
    assert code == 0
    summary = RunFolder(out).read_summary()
    assert summary.protocol == "umnibench"
    assert summary.bindings == {"edit": "sim/umm", "generate": "sim/umm", "judge": "sim/umm", "understand": "sim/umm"}
    assert set(summary.counts.model_dump()) >= {"cases", "nodes", "computed", "cached", "failed"}
    cases = summary.counts.cases
    assert cases >= 26
    assert summary.counts.nodes == cases * 12
    assert summary.calls == {"edit": 2 * cases, "generate": cases, "understand": 9 * cases}
    scores = summary.scores
    assert set(scores["stages"]) == {"generation", "interaction", "counterfactual"}
    assert list(scores["questions"]) == [f"Q{i}" for i in range(1, 10)]
    assert len(scores["domains"]) == 13
    assert scores["overall"] == 81.6239  # sim/umm on the bundled cases; deterministic
    lines = (out / "results.jsonl").read_text().splitlines()
    assert len(lines) == cases
    record = json.loads(lines[0])
    assert len(record["questions"]) == 9 and all("correct" in q for q in record["questions"].values())
    events = [json.loads(l) for l in (out / "events.jsonl").read_text().splitlines()]
    assert events[0]["event"] == "run.start" and events[-1]["event"] == "run.end"


def test_report_references_only_existing_files(first_run):
    _, out, _ = first_run
    html = (out / "report.html").read_text()
    refs = re.findall(r'(?:src|href)="([^"#]+)"', html)
    assert refs and all((out / r).exists() for r in refs)
    assert "base64" not in html
    assert "Accuracy by stage" in html and "Accuracy by domain" in html


def test_rerun_is_fully_cached(first_run, tmp_path):
    code, out, cache = first_run
    before = (out / "results.jsonl").read_bytes()
    assert run_cli("run", "umnibench", "--model", "sim/umm", "--out", str(out), "--cache", str(cache), "--quiet") == 0
    summary = RunFolder(out).read_summary()
    assert summary.counts.computed == 0 and summary.this_invocation.calls == {}  # calls: the run's totals
    assert (out / "results.jsonl").read_bytes() == before


def test_swapping_the_understander_makes_no_generate_or_edit_calls(first_run, tmp_path):
    _, _, cache = first_run
    out = tmp_path / "swap"
    code = run_cli("run", "umnibench", "--model", "sim/umm", "--role", "understand=sim/umm?skill=0.5",
                   "--out", str(out), "--cache", str(cache), "--quiet")
    assert code == 0
    summary = RunFolder(out).read_summary()
    assert set(summary.calls) == {"understand"}
    assert summary.bindings["understand"] == "sim/umm?skill=0.5"


def test_different_command_into_same_run_dir_is_refused(first_run, capsys):
    _, out, cache = first_run
    code = run_cli("run", "umnibench", "--model", "sim/umm?skill=0.3", "--out", str(out), "--cache", str(cache), "--quiet")
    assert code == 2
    assert "different command" in capsys.readouterr().err


def test_bad_case_file_exits_2_before_any_call(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x"}\n')
    code = run_cli("run", "umnibench", "--cases", str(bad), "--model", "sim/umm", "--out", str(tmp_path / "o"),
                   "--cache", str(tmp_path / "c"), "--quiet")
    assert code == 2
    err = capsys.readouterr().err
    assert f"{bad}:1" in err and "field 'domain'" in err
    assert not (tmp_path / "o" / "summary.json").exists()


def test_unknown_provider_and_role_list_known_ones(tmp_path, capsys):
    assert run_cli("run", "umnibench", "--model", "nope/x", "--out", str(tmp_path / "o")) == 2
    assert "known providers" in capsys.readouterr().err
    assert run_cli("run", "umnibench", "--model", "sim/umm", "--role", "painter=sim/umm", "--out", str(tmp_path / "o")) == 2
    assert "known roles" in capsys.readouterr().err


def test_listing_commands(capsys):
    assert run_cli("protocols") == 0
    assert "umnibench" in capsys.readouterr().out
    assert run_cli("backends") == 0
    assert "sim" in capsys.readouterr().out
    assert run_cli("cases", "check", "umnibench") == 0
    assert "cases valid" in capsys.readouterr().out
    assert run_cli("cases", "schema", "umnibench") == 0
    schema = json.loads(capsys.readouterr().out)
    assert "generation" in schema["properties"]
