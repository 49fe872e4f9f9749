"""How a number was made (issue 33 item 1): summary.json and tables.json carry, per role, the model,
revision, settings and the judge template's hash, with the scoring version, the deviations and umni's
version; `umni methods` writes them up as a paragraph and a table, and leaderboards footnote them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.omni_server import OmniServer
from tests.support.openai_server import OpenAIStubServer
from umni.backends.factory import create_backend
from umni.cli import main
from umni.protocols.protocol import get_protocol
from umni.store.runfolder import RunFolder
from umni.util.spec import Spec
from umni.util.version import __version__, commit_of

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bench/, beside tests/
from bench.stub_server import protocol_reply  # noqa: E402  (replies every protocol's parser reads)

BAGEL = "ByteDance-Seed/BAGEL-7B-MoT"
JUDGE = "Qwen/Qwen3.5-35B-A3B"


def run(tmp_path: Path, out: str, protocol: str, *args: str) -> Path:
    folder = tmp_path / out
    argv = ["run", protocol, "--limit", "6", "--quiet", "--out", str(folder), "--cache", str(tmp_path / "cache"), *args]
    assert main(argv) == 0
    return folder


@pytest.fixture(scope="module")
def wise_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run(tmp_path_factory.mktemp("wise"), "wise", "wise", "--model", "sim/umm", "--seed", "7")


@pytest.fixture(scope="module")
def served_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """WISE with BAGEL drawing through chat behind a vLLM-Omni-shaped server and a served judge
    whose spec caps its replies at 64 tokens."""
    with OmniServer(BAGEL, responder=protocol_reply, images_endpoints=False) as drawer, \
            OpenAIStubServer(responder=lambda chat: protocol_reply(chat.texts), chat_only=True, models=[JUDGE]) as judge:
        return run(tmp_path_factory.mktemp("served"), "served", "wise", "--model", f"openai/{BAGEL}?base_url={drawer.base_url}",
                   "--role", f"judge=openai/{JUDGE}?base_url={judge.base_url}&max_tokens=64")


def test_summary_names_each_role_its_template_hash_sampling_and_the_deviations(wise_run: Path) -> None:
    summary = RunFolder(wise_run).read_summary()
    made = summary.provenance
    assert made is not None
    assert (made.umni_version, made.protocol, made.scoring_version, made.seed) == (__version__, "wise", "1", 7)
    assert made.deviations == [d["id"] for d in summary.scores["deviations"]] and "judge-wording" in made.deviations
    # a single --model binds every role; only those WISE asks are stated
    assert sorted(made.roles) == ["generate", "judge"]
    judge = made.roles["judge"]
    assert (judge.backend, judge.revision, judge.device) == ("sim", "2", "cpu")
    assert judge.sampling is None  # sim/umm samples nothing: the judge nodes' temperature 0 changes nothing it says
    protocol = get_protocol("wise")
    assert judge.template_hash == protocol.templates(protocol.parse_options({}))["judge"].digest()
    assert judge.template_follows is not None and "vllm_eval.py" in judge.template_follows
    assert made.roles["generate"].template_hash is None
    # tables.json says the same
    tables = RunFolder(wise_run).read_tables()
    assert tables is not None and tables.provenance == made


def test_the_judge_template_hash_follows_the_wording(tmp_path: Path) -> None:
    protocol = get_protocol("wise")
    own = tmp_path / "judge.yaml"
    own.write_text("user: 'Is this {prompt}? Note: {explanation}. Score: <0-1>'\n")
    ours = protocol.templates(protocol.parse_options({}))["judge"]
    theirs = protocol.templates(protocol.parse_options({"judge_prompt": str(own)}))["judge"]
    legacy = protocol.templates(protocol.parse_options({"scoring": "legacy"}))["judge"]
    assert len({ours.digest(), theirs.digest(), legacy.digest()}) == 3
    assert theirs.follows is not None and "judge.yaml" in theirs.follows
    assert legacy.max_tokens == 2000 and legacy.follows is not None and "gpt_eval.py" in legacy.follows


def test_methods_names_models_revisions_template_hash_sampling_and_deviations(served_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    made = RunFolder(served_run).read_summary().provenance
    assert made is not None and made.roles["judge"].template_hash is not None
    assert main(["methods", str(served_run)]) == 0
    text = capsys.readouterr().out
    paragraph, table = text.split("\n\n", 1)
    assert f"umni {__version__}" in paragraph and "seed 0" in paragraph
    assert f"The generate role: {BAGEL} (openai backend), revision /models/{BAGEL}" in paragraph
    assert f"The judge role: {JUDGE} (openai backend), temperature 0, at most 64 tokens" in paragraph
    assert made.roles["judge"].template_hash[:12] in paragraph and "vllm\\_eval.py" in paragraph
    assert all(deviation in paragraph for deviation in made.deviations)
    rows = [line for line in table.splitlines() if line.startswith("| ")][1:]
    assert [row.split(" | ")[2] for row in rows] == ["generate", "judge"]
    assert "| 0 | 64 |" in rows[1] and made.roles["judge"].template_hash[:12] in rows[1]


def test_methods_in_latex_escapes_what_tex_treats_specially(wise_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["methods", str(wise_run), "--format", "latex"]) == 0
    text = capsys.readouterr().out
    assert "vllm\\_eval.py" in text and "0\\textbar{}1" in text and "\\begin{tabular}" in text
    body = text.replace("\\_", "").replace("\\textbar{}", "")
    assert "_" not in body.split("\\begin{tabular}")[0] and "|" not in body


def test_methods_over_a_sweep_folder_lists_every_run_and_says_which_recorded_nothing(
    tmp_path: Path, wise_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sweep = tmp_path / "sweep"
    shutil.copytree(wise_run, sweep / "wise")
    run(tmp_path, "sweep/umnibench", "umnibench", "--model", "sim/umm")
    old = sweep / "old"
    shutil.copytree(wise_run, old)
    summary = json.loads((old / "summary.json").read_text())
    del summary["provenance"]  # as an umni before provenance wrote it
    (old / "summary.json").write_text(json.dumps(summary))
    assert main(["methods", str(sweep)]) == 0
    text = capsys.readouterr().out
    assert "UmniBench" in text and "WISE" in text and "1 run(s) were made by an umni that did not record how" in text
    rows = [line for line in text.splitlines() if line.startswith("| ")][1:]
    assert {row.split(" | ")[1] for row in rows} == {"umnibench", "wise"}
    assert sum("not recorded" in row for row in rows) == 1


def test_leaderboard_footnotes_how_each_run_was_made(wise_run: Path, tmp_path: Path) -> None:
    assert main(["leaderboard", str(wise_run), "--out", str(tmp_path / "board")]) == 0
    markdown = (tmp_path / "board" / "leaderboard.md").read_text()
    (line,) = [line for line in markdown.splitlines() if line.startswith("how made, ")]
    made = RunFolder(wise_run).read_summary().provenance
    assert made is not None and made.roles["judge"].template_hash is not None
    assert "judge sim/umm (skill=1) rev 2" in line and made.roles["judge"].template_hash[:12] in line
    assert "deviations: judge-wording" in line
    board = json.loads((tmp_path / "board" / "leaderboard.json").read_text())
    assert board[0]["how_made"] == [line]


def test_served_models_name_the_id_the_server_reported_and_the_request_shape(served_run: Path) -> None:
    made = RunFolder(served_run).read_summary().provenance
    assert made is not None
    drawing, judging = made.roles["generate"], made.roles["judge"]
    assert (drawing.model, drawing.reported_id, drawing.revision) == (BAGEL, BAGEL, f"/models/{BAGEL}")
    assert drawing.http_shape == "openai chat completions (image output)"
    assert (judging.model, judging.reported_id, judging.revision, judging.http_shape) == (JUDGE, JUDGE, None, "openai chat completions")
    # the spec's token limit is what the backend sends; the protocol's temperature fills the gap
    assert judging.sampling is not None and (judging.sampling.max_tokens, judging.sampling.temperature) == (64, 0.0)
    # a reasoning model is sent no node temperature: none is claimed for it
    reasoning = create_backend(Spec.parse("openai/o3-mini?base_url=http://127.0.0.1:9/v1"))
    assert reasoning.request_settings("judge") == frozenset({"max_tokens"})


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_the_commit_is_read_from_a_checkout_a_worktree_and_packed_refs(tmp_path: Path) -> None:
    def git(*args: str, cwd: Path = tmp_path / "repo") -> str:
        return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()

    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", "-b", "main")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "one")
    head = git("rev-parse", "HEAD")
    assert commit_of(repo) == head
    git("pack-refs", "--all")
    assert not (repo / ".git" / "refs" / "heads" / "main").exists() and commit_of(repo) == head
    git("worktree", "add", "-q", "-b", "other", str(tmp_path / "wt"))
    assert commit_of(tmp_path / "wt") == head
    git("checkout", "-q", "--detach")
    assert commit_of(repo) == head
    assert commit_of(tmp_path / "nothing") is None


def test_the_viewer_shows_how_each_run_was_made(wise_run: Path) -> None:
    from umni.reporting.viewer import ViewerData

    data = ViewerData([wise_run])
    (run_entry,) = data.index()["runs"]
    made = RunFolder(wise_run).read_summary().provenance
    assert made is not None and made.roles["judge"].template_hash is not None
    lines = run_entry["how_made"]
    assert lines[0].startswith(f"umni {__version__}") and "seed 7" in lines[0]
    assert any(line.startswith("judge: sim/umm (skill=1) (sim backend), revision 2, cpu") for line in lines)
    assert f"judge template: sha256 {made.roles['judge'].template_hash}" in "\n".join(lines)
    assert lines[-1] == "deviations in effect: " + ", ".join(made.deviations)
    assert any(table.get("how_made") for table in data.tables())
