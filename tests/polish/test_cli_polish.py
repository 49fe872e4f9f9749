"""CLI polish: --version, protocols --options, runs, progress lines off a terminal, coverage beside
the headline, --fail-on-error, and the extra a missing package comes with."""

import io
import json
import re
import sys

import pytest

from umni import __version__
from umni.cli import EXIT_FAILURES, main
from umni.store.runfolder import RunFolder
from umni.util.extras import missing_extra_hint
from umni.util.progress import Progress


def run_args(tmp_path, out, model="sim/umm", *extra):
    return ["run", "umnibench", "--model", model, "--limit", "2", "--out", str(tmp_path / out), "--cache", str(tmp_path / "cache"), "--quiet", *extra]


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out.strip() == f"umni {__version__}"


def test_protocols_lists_options_with_defaults(capsys):
    assert main(["protocols", "--options"]) == 0
    out = capsys.readouterr().out
    assert "--option ability=full|understanding|generation|editing  (default: 'full')" in out
    assert re.search(r"--option judge_rounds=int  \(default: 3\)", out)
    assert main(["protocols"]) == 0 and "--option" not in capsys.readouterr().out


def test_protocols_options_print_a_description_for_every_option_of_every_protocol(capsys):
    """Each protocol's every option has a description, and `umni protocols --options` prints it on the option's line."""
    from umni.protocols.protocol import get_protocol, known_protocols

    assert main(["protocols", "--options"]) == 0
    lines = capsys.readouterr().out.splitlines()
    for name in known_protocols():
        for key, info in get_protocol(name).Options.model_fields.items():
            assert info.description, f"{name}: option {key} has no description"
            shown = [row for row in lines if row.strip().startswith(f"--option {key}=") and row.rstrip().endswith(info.description)]
            assert shown, f"{name}: option {key}'s description is not printed"


def test_runs_lists_run_directories(tmp_path, capsys):
    assert main(run_args(tmp_path, "runs/a")) == 0
    assert main(run_args(tmp_path, "runs/b", "sim/umm?error_rate=0.5", "--max-attempts", "1", "--cache", str(tmp_path / "other"))) == 0
    capsys.readouterr()
    assert main(["runs", str(tmp_path / "runs")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:4] == ["date", "(UTC)", "protocol", "overall"]
    a = next(line for line in lines if line.endswith("runs/a"))
    b = next(line for line in lines if line.endswith("runs/b"))
    assert "umnibench" in a and "24/24" in a and re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d", a)
    assert re.search(r"\d+/24\*", b) and "sim/umm?error_rate=0.5" in b
    assert lines[-1].startswith("* score computed on incomplete coverage")


def test_headline_shows_coverage_and_fail_on_error_sets_the_exit_code(tmp_path, capsys):
    # the case: most nodes failed, yet the overall alone read high
    args = run_args(tmp_path, "bad", "sim/umm?error_rate=0.5", "--max-attempts", "1")
    assert main(args) == 0
    out = capsys.readouterr().out
    overall = next(line for line in out.splitlines() if line.startswith("overall:"))
    summary = RunFolder(tmp_path / "bad").read_summary()
    failed = sum(v for v in summary.failures.values())
    assert failed > 0
    assert f"({24 - failed}/24 nodes answered)*" in overall
    assert "INCOMPLETE" in out
    report = (tmp_path / "bad" / "report.html").read_text()
    assert f"Coverage: {24 - failed}/24 nodes answered" in report and "computed on incomplete coverage" in report
    assert re.search(r"\d+\.\d\d \(\d+/18\)\*", report)  # the overall beside its answered questions, marked
    records = [json.loads(line) for line in (tmp_path / "bad" / "results.jsonl").read_text().splitlines()]
    messages = [n["failure"]["message"] for r in records for n in r["nodes"].values() if "failure" in n]
    assert messages and all(m in report for m in messages)  # raw failure messages, not only their kind
    assert main(args + ["--fail-on-error"]) == EXIT_FAILURES
    assert "above --fail-on-error 0" in capsys.readouterr().err
    assert main(args + ["--fail-on-error", "0.99"]) == 0
    assert main(run_args(tmp_path, "good", "sim/umm", "--fail-on-error")) == 0
    assert "(24/24 nodes answered)" in capsys.readouterr().out
    try:  # refused as input, before anything runs
        code = main(args + ["--fail-on-error", "2"])
    except SystemExit as exc:
        code = exc.code
    assert code == 2 and "--fail-on-error" in capsys.readouterr().err


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_progress_writes_plain_lines_with_rate_and_eta_off_a_terminal():
    stream, clock = io.StringIO(), Clock()
    progress = Progress("umni t", stream=stream, log_every=10, clock=clock)
    assert progress.mode == "log"
    progress.cases_total = 100
    progress.cases_done = 20  # resumed: not part of the rate
    with progress:
        clock.now += 5
        progress.cases_done += 10
        assert stream.getvalue() == ""  # not yet due
        clock.now += 15  # 20 s in, 20 cases done now: 1 case/s, 60 to go
        progress.cases_done += 10
        progress.bump("computed", 7)
    lines = stream.getvalue().splitlines()
    assert lines[0] == ("umni t: 40/100 cases (40.0%) · 1.00 cases/s · elapsed 0:00:20 · ETA 0:01:00 · "
                        "nodes done 0 cached 0 running 0 retrying 0 failed 0")
    assert len(lines) == 2 and "nodes done 7" in lines[1]  # the closing line


def test_progress_is_silent_when_quiet():
    stream = io.StringIO()
    with Progress("t", enabled=False, stream=stream, log_every=0) as progress:
        progress.cases_done = 1
    assert stream.getvalue() == ""


def test_missing_extra_names_the_install_command(tmp_path, monkeypatch, capsys):
    assert missing_extra_hint(ModuleNotFoundError("x", name="diffusers.pipelines")) == "pip install 'umni[hf]'"
    assert missing_extra_hint(ModuleNotFoundError("x", name="rapidocr_onnxruntime")) == "pip install 'umni[ocr]'"
    assert missing_extra_hint(ModuleNotFoundError("x", name="numpy")) is None
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"architectures": ["Qwen2VLForConditionalGeneration"], "model_type": "qwen2_vl"}))
    for name in ("torch", "transformers"):  # as if the hf extra were not installed
        monkeypatch.setitem(sys.modules, name, None)
    assert main(["run", "umnibench", "--model", f"hf/{model}", "--limit", "1", "--out", str(tmp_path / "o"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "pip install 'umni[hf]'" in err and "Traceback" not in err
