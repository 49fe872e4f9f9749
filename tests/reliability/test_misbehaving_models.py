"""Models that answer, but badly: each output is recorded as what it is and counted, never scored.

A judge off format is a parse failure (after the allowed re-asks), an answer naming no option is an
invalid answer, an empty or 1x1 picture is a degenerate output. Records keep the raw reply; the
summary counts each kind; scores are computed over the rest (a score of None when nothing is left),
never with a 0 standing in for the failure.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image
from reliability_support import FAST_RETRY, letter_by_hash, openai_spec, read_results
from tiny_protocol import DrawAndJudge, ScriptedModel, run_protocol

from tests.support.openai_server import OpenAIStubServer
from umni.backends.bindings import Bindings
from umni.backends.roles import ChoiceReply
from umni.run.evaluation import RunRequest, evaluate
from umni_graphs.umnibench import PROTOCOL as UMNIBENCH

REPO = Path(__file__).resolve().parents[2]
UMNI_CASES = 2


def tiny_cases(tmp_path: Path, prompts: list[str]) -> Path:
    path = tmp_path / "tiny.jsonl"
    path.write_text("".join(json.dumps({"id": f"c{i}", "prompt": p}) + "\n" for i, p in enumerate(prompts)), encoding="utf-8")
    return path


def umnibench_cases(tmp_path: Path) -> Path:
    lines = (REPO / "cases/umnibench/cases.jsonl").read_text(encoding="utf-8").splitlines()[:UMNI_CASES]
    path = tmp_path / "umni.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_judge_off_format_is_a_parse_failure_not_a_score(tmp_path):
    model = ScriptedModel(judge=["What a lovely picture! I would give it full marks."])
    result = run_protocol(DrawAndJudge(), tiny_cases(tmp_path, ["a red square"] * 2), tmp_path / "run",
                          Bindings({"generate": model, "judge": model}), retry=FAST_RETRY)  # fmt: skip
    summary = result.summary
    assert summary.failures["parse"] == 2
    assert summary.scores.root | {"mean": None, "judged": 0, "unjudged": 2} == summary.scores.root
    # 1 ask + parse_retries re-asks per case; both cases send the same prompt, so the second
    # shares the first one's work and costs nothing.
    assert model.calls["respond"] == 1 + FAST_RETRY.parse_retries
    record = read_results(tmp_path / "run")[0]
    failure = record["nodes"]["verdict"]["failure"]
    assert failure["kind"] == "parse" and failure["attempts"] == 1 + FAST_RETRY.parse_retries
    assert failure["raw"].startswith("What a lovely picture")
    assert record["score"] is None


def test_a_judge_that_finds_the_format_on_a_re_ask_is_scored(tmp_path):
    model = ScriptedModel(judge=["Hmm, nice.", "Score: 1"])
    result = run_protocol(DrawAndJudge(), tiny_cases(tmp_path, ["a red square"]), tmp_path / "run",
                          Bindings({"generate": model, "judge": model}), retry=FAST_RETRY)  # fmt: skip
    scores = result.summary.scores.root
    assert scores | {"mean": 1, "judged": 1, "unjudged": 0} == scores
    assert not any(result.summary.failures.values())
    assert model.calls["respond"] == 2


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        (lambda n: ChoiceReply(index=n + 3, text="Answer: H", mode="letter"), "past the last option"),
        (lambda n: ChoiceReply(index=-1, text="Answer: -", mode="letter"), "negative"),
        (lambda n: ChoiceReply(index=None, text="None of these, honestly.", mode="letter"), "no option named"),
    ],
)
def test_an_answer_naming_no_option_is_invalid_not_wrong(tmp_path, reply, why):
    model = ScriptedModel(choose=reply)
    roles = {"generate": model, "edit": model, "understand": model}
    result = run_protocol(UMNIBENCH, umnibench_cases(tmp_path), tmp_path / "run", Bindings(roles), retry=FAST_RETRY)
    summary = result.summary
    assert summary.failures["invalid"] == 9 * UMNI_CASES, why
    assert summary.scores["overall"] is None  # nothing answered: no score, rather than 0
    assert all(v == UMNI_CASES for v in summary.scores["failed"].values())
    for record in read_results(tmp_path / "run"):
        for question in record["questions"].values():
            assert question["correct"] is None and question["failure"] == "invalid"


@pytest.mark.parametrize("size", [(0, 0), (1, 1), (64, 1)])
def test_an_empty_or_one_pixel_image_is_degenerate(tmp_path, size):
    model = ScriptedModel(image=lambda: Image.new("RGB", size))
    roles = {"generate": model, "edit": model, "understand": model}
    result = run_protocol(UMNIBENCH, umnibench_cases(tmp_path), tmp_path / "run", Bindings(roles), retry=FAST_RETRY)
    summary = result.summary
    assert summary.failures["degenerate"] == UMNI_CASES
    assert summary.failures["blocked"] == 11 * UMNI_CASES  # nothing was asked about a missing picture
    assert model.calls["choose"] == 0 and model.calls["edit"] == 0
    assert summary.scores["overall"] is None
    record = read_results(tmp_path / "run")[0]
    assert record["nodes"]["generation/image"]["failure"]["kind"] == "degenerate"
    assert record["stages"]["generation"]["image"] is None


def test_a_generator_returning_nothing_is_degenerate(tmp_path):
    model = ScriptedModel(image=lambda: None)
    result = run_protocol(DrawAndJudge(), tiny_cases(tmp_path, ["a red square"]), tmp_path / "run",
                          Bindings({"generate": model, "judge": model}), retry=FAST_RETRY)  # fmt: skip
    assert result.summary.failures["degenerate"] == 1 and result.summary.failures["blocked"] == 1
    assert model.calls["respond"] == 0


class OnePixelStub(OpenAIStubServer):
    """The stub server, but every picture it hands out is a valid 1x1 PNG."""

    def image_response(self, image: Image.Image, *, as_url: bool, corrupt: bool) -> dict:
        return super().image_response(Image.new("RGB", (1, 1)), as_url=as_url, corrupt=corrupt)


def test_over_http_a_1x1_picture_and_an_unknown_letter_are_counted(tmp_path):
    """The same accounting when the model is a real HTTP server (the OpenAI backend and the stub)."""
    with OpenAIStubServer(responder=lambda chat: "Answer: Z") as server:
        request = RunRequest(protocol="umnibench", out=tmp_path / "letters", cache=tmp_path / "c1", limit=1,
                             model=openai_spec(server), retry=FAST_RETRY, progress=False)  # fmt: skip
        letters = evaluate(request).summary
    assert letters.failures["invalid"] == 9 and letters.scores.overall is None

    with OnePixelStub(responder=letter_by_hash) as server:
        request = RunRequest(protocol="umnibench", out=tmp_path / "tiny", cache=tmp_path / "c2", limit=1,
                             model=openai_spec(server), retry=FAST_RETRY, progress=False)  # fmt: skip
        tiny = evaluate(request).summary
        assert server.count("/images/generations") == 1  # degenerate output is not retried
    assert tiny.failures["degenerate"] == 1 and tiny.failures["blocked"] == 11
