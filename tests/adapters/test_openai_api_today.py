"""Today's API models through the OpenAI-compatible backend: reasoning models' token field, extra body
fields (spec and node), refusals, responses without usage, and image edits without `style`.
Every test talks to a real loopback server (tests.support.openai_server)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import anyio
import pytest
from PIL import Image

from tests.support.openai_server import Fault, OpenAIStubServer, draw_from_prompt, with_openai_backend
from umni.backends.contract import Backend
from umni.backends.roles import JUDGE, Part, RequestOptions, TextReply, Usage, respond_with
from umni.cli import main
from umni.reporting.pricing import Price, estimate
from umni.store.runfolder import RunFolder, Summary
from umni.util.errors import BackendError, ConfigError, Refusal
from umni.util.spec import Spec
from umni_adapters.openai_http import OpenAIBackend, is_reasoning_model

run = with_openai_backend


# -- reasoning models: which field carries the limit ---------------------------------------------------


@pytest.mark.parametrize(
    ("model", "reasoning"),
    [
        ("o1", True), ("o3-mini", True), ("o4-mini-2025-04-16", True), ("gpt-5", True), ("gpt-5.1", True),
        ("gpt-5-mini", True), ("openai/gpt-5-nano", True),
        ("gpt-4o", False), ("gpt-4.1-mini", False), ("Qwen/Qwen3-VL-8B-Instruct", False), ("omni-moderation", False),
        ("gpt-50", False),
    ],
)  # fmt: skip
def test_reasoning_models_are_recognised_by_name(model: str, reasoning: bool) -> None:
    assert is_reasoning_model(model) is reasoning


@pytest.mark.parametrize(
    ("model", "param", "field"),
    [
        ("gpt-5-mini", "", "max_completion_tokens"),
        ("o3", "", "max_completion_tokens"),
        ("gpt-4o", "", "max_tokens"),
        ("Qwen/Qwen2.5-VL-7B-Instruct", "", "max_tokens"),
        ("gpt-4o", "&token_field=max_completion_tokens", "max_completion_tokens"),
        ("o3", "&token_field=max_tokens", "max_tokens"),
    ],
)
def test_the_limit_goes_in_the_field_the_model_takes(model: str, param: str, field: str) -> None:
    with OpenAIStubServer() as server:
        run(f"openai/{model}?base_url={server.base_url}{param}", lambda b: b.respond(["hi"], max_tokens=300))
        sent = server.last("/chat/completions").json
    other = {"max_tokens", "max_completion_tokens"} - {field}
    assert sent[field] == 300 and not other & set(sent)


def test_a_bad_token_field_is_refused_naming_the_parameter() -> None:
    with pytest.raises(ConfigError, match="token_field"):
        OpenAIBackend(Spec.parse("openai/m?token_field=max_output_tokens"))


# -- extra body fields ---------------------------------------------------------------------------------


def test_spec_extra_body_is_sent_with_every_chat_request() -> None:
    extra = '{"chat_template_kwargs":{"enable_thinking":false},"top_k":5}'
    with OpenAIStubServer() as server:
        run(f"openai/m?base_url={server.base_url}&extra_body={extra}", lambda b: b.respond(["hi"]))
        sent = server.last("/chat/completions").json
    assert sent["chat_template_kwargs"] == {"enable_thinking": False} and sent["top_k"] == 5


def test_extra_body_enters_identity_by_content() -> None:
    a = OpenAIBackend(Spec.parse('openai/m?extra_body={"a": 1, "b": {"c": true}}'))
    b = OpenAIBackend(Spec.parse('openai/m?extra_body={"b":{"c":true},"a":1}'))
    c = OpenAIBackend(Spec.parse('openai/m?extra_body={"a":2}'))
    plain = OpenAIBackend(Spec.parse("openai/m"))
    assert a.identity_hash() == b.identity_hash()
    assert len({a.identity_hash(), c.identity_hash(), plain.identity_hash()}) == 3


@pytest.mark.parametrize(
    ("value", "complaint"),
    [
        ("{not json", "extra_body"),
        ("[1, 2]", "extra_body"),
        ('{"model": "other"}', "model"),
        ('{"messages": []}', "messages"),
    ],
)
def test_bad_extra_body_is_refused_at_construction(value: str, complaint: str) -> None:
    with pytest.raises(ConfigError, match=complaint):
        OpenAIBackend(Spec.parse(f"openai/m?extra_body={value}"))


def test_node_options_send_a_system_message_temperature_and_extra_fields() -> None:
    options = RequestOptions(
        system="You grade images.", temperature=0.0, extra_body={"chat_template_kwargs": {"enable_thinking": False}}
    )
    spec_extra = '{"chat_template_kwargs":{"thinking_budget":0}}'
    with OpenAIStubServer() as server:
        run(
            f"openai/m?base_url={server.base_url}&extra_body={spec_extra}",
            lambda b: b.respond(["grade this"], max_tokens=500, options=options),
        )
        sent = server.last("/chat/completions").json
    assert sent["messages"][0] == {"role": "system", "content": "You grade images."}
    assert sent["messages"][1]["role"] == "user"
    assert sent["temperature"] == 0.0
    # nested objects merge; the spec's fields win where both set one
    assert sent["chat_template_kwargs"] == {"enable_thinking": False, "thinking_budget": 0}


def test_the_spec_temperature_wins_and_reasoning_models_get_no_node_temperature() -> None:
    options = RequestOptions(temperature=0.0)
    with OpenAIStubServer() as server:
        run(f"openai/m?base_url={server.base_url}&temperature=0.7", lambda b: b.respond(["a"], options=options))
        spec_wins = server.last("/chat/completions").json
        run(f"openai/gpt-5?base_url={server.base_url}", lambda b: b.respond(["a"], options=options))
        reasoning = server.last("/chat/completions").json
    assert spec_wins["temperature"] == 0.7
    assert "temperature" not in reasoning


def test_a_node_may_not_overwrite_what_umni_builds() -> None:
    options = RequestOptions(extra_body={"messages": []})
    with OpenAIStubServer() as server, pytest.raises(ConfigError, match="messages"):
        run(f"openai/m?base_url={server.base_url}", lambda b: b.respond(["a"], options=options))


class _PlainBackend(Backend):
    """A plugin written before request options existed: `respond` takes no `options`."""

    provider: ClassVar[str] = "plain"
    roles: ClassVar[frozenset[str]] = frozenset({JUDGE})

    def __init__(self, spec: Spec) -> None:
        super().__init__(spec)
        self.seen: list[list[Part]] = []

    async def respond(self, parts: Sequence[Part], *, max_tokens: int = 512, seed: int = 0) -> TextReply:
        self.seen.append(list(parts))
        return TextReply(text="ok")


def test_a_backend_without_options_gets_the_system_message_as_the_first_part() -> None:
    plain = _PlainBackend(Spec.parse("plain/x"))
    params = {"system": "Be strict.", "temperature": 0, "extra_body": {"chat_template_kwargs": {}}, "max_tokens": 9}
    anyio.run(lambda: respond_with(plain, ["grade"], params, max_tokens=9, seed=0))
    anyio.run(lambda: respond_with(plain, ["grade"], {"max_tokens": 9}, max_tokens=9, seed=0))
    assert plain.seen == [["Be strict.", "grade"], ["grade"]]


def test_respond_with_hands_node_params_to_the_openai_backend() -> None:
    params = {
        "system": "Be strict.",
        "temperature": 0,
        "extra_body": {"chat_template_kwargs": {"enable_thinking": False}},
    }

    async def call(b: OpenAIBackend) -> TextReply:
        return await respond_with(b, ["grade"], params, max_tokens=500, seed=3)

    with OpenAIStubServer() as server:
        run(f"openai/m?base_url={server.base_url}", call)
        sent = server.last("/chat/completions").json
    assert sent["messages"][0]["content"] == "Be strict." and sent["temperature"] == 0.0
    assert (sent["chat_template_kwargs"], sent["max_tokens"], sent["seed"]) == ({"enable_thinking": False}, 500, 3)


# -- refusals ------------------------------------------------------------------------------------------


def _refuse(response: dict[str, Any]) -> None:
    message = response["choices"][0]["message"]
    message["content"] = None
    message["refusal"] = "I can't help with grading that image."


def _filtered(response: dict[str, Any]) -> None:
    response["choices"][0]["finish_reason"] = "content_filter"
    response["choices"][0]["message"]["content"] = ""


def test_a_refusal_is_a_typed_refusal_with_its_text() -> None:
    with OpenAIStubServer(patch_completion=_refuse) as server, pytest.raises(Refusal) as caught:
        run(f"openai/m?base_url={server.base_url}", lambda b: b.respond(["grade"]))
    assert caught.value.kind == "refusal"
    assert caught.value.raw == "I can't help with grading that image."
    assert "I can't help with grading that image." in str(caught.value)


def test_a_content_filter_stop_is_a_refusal_and_choices_refuse_too() -> None:
    with OpenAIStubServer(patch_completion=_filtered) as server:
        with pytest.raises(Refusal, match="content_filter"):
            run(f"openai/m?base_url={server.base_url}", lambda b: b.respond(["grade"]))
        with pytest.raises(Refusal):
            run(f"openai/m?base_url={server.base_url}", lambda b: b.choose(["Q"], ["a", "b"]))


# -- usage ---------------------------------------------------------------------------------------------


def test_a_response_without_usage_has_unknown_tokens_and_sums_stay_unknown() -> None:
    async def two(b: OpenAIBackend) -> tuple[TextReply, Usage]:
        reply = await b.respond(["hi"])
        return reply, b.total_usage

    with OpenAIStubServer(include_usage=False) as server:
        reply, total = run(f"openai/m?base_url={server.base_url}", two)
    assert (reply.usage.calls, reply.usage.input_tokens, reply.usage.output_tokens) == (1, None, None)
    assert (total.calls, total.input_tokens, total.output_tokens) == (1, None, None)
    known = Usage(input_tokens=10, output_tokens=2)
    known.add(reply.usage)
    assert (known.calls, known.input_tokens, known.output_tokens) == (2, None, None)


def test_unknown_tokens_give_an_unknown_cost_not_zero() -> None:
    usage = {
        "judge": {"calls": 3, "input_tokens": None, "output_tokens": None, "images_out": 0},
        "generate": {"calls": 2, "input_tokens": None, "output_tokens": None, "images_out": 2},
        "understand": {"calls": 1, "input_tokens": 1_000_000, "output_tokens": 0, "images_out": 0},
    }
    bindings = {"judge": "openai/gpt-4o", "generate": "openai/gpt-image-1", "understand": "openai/gpt-4o"}
    prices = {
        "openai/gpt-4o": Price(input_per_million=2.5, output_per_million=10.0),
        "openai/gpt-image-1": Price(per_image=0.04),
    }
    cost = estimate(usage, bindings, prices)
    # judge: per-token price, unknown tokens -> unknown; generate: priced per image -> 2 x 0.04; understand: 2.5
    assert cost.per_role == {"judge": None, "generate": 0.08, "understand": 2.5}
    assert cost.unknown_roles == ["judge"] and cost.total is None
    assert cost.known_total == pytest.approx(2.58)


# -- images --------------------------------------------------------------------------------------------


def test_style_goes_to_generations_but_never_to_edits() -> None:
    source = draw_from_prompt("source", (32, 32))
    with OpenAIStubServer() as server:
        spec = f"openai/dall-e-3?base_url={server.base_url}&style=vivid&quality=hd"
        run(spec, lambda b: b.generate(["a barn"]))
        run(spec, lambda b: b.edit([source], "paint it red"))
        generation = server.last("/images/generations").json
        edit = server.last("/images/edits").form
    assert (generation["style"], generation["quality"]) == ("vivid", "hd")
    assert "style" not in edit and edit["quality"] == "hd"


def test_extra_body_reaches_image_requests_and_edits_as_form_fields() -> None:
    source = Image.new("RGB", (16, 16), (10, 20, 30))
    with OpenAIStubServer() as server:
        spec = f'openai/gpt-image-1?base_url={server.base_url}&extra_body={{"background":"opaque","output_compression":80}}'
        run(spec, lambda b: b.generate(["a barn"]))
        run(spec, lambda b: b.edit([source], "paint it red"))
        generation = server.last("/images/generations").json
        edit = server.last("/images/edits").form
    assert (generation["background"], generation["output_compression"]) == ("opaque", 80)
    assert (edit["background"], edit["output_compression"]) == ("opaque", "80")


# -- through a run ---------------------------------------------------------------------------------------


def _wise_run(tmp_path: Path, server: OpenAIStubServer, *extra: str) -> tuple[Summary, list[dict[str, Any]]]:
    out = tmp_path / "run"
    code = main([
        "run", "wise", "--role", "generate=sim/umm", "--role", f"judge=openai/judge-vlm?base_url={server.base_url}",
        "--out", str(out), "--cache", str(tmp_path / "cache"), "--limit", "3", "--quiet", *extra,
    ])  # fmt: skip
    assert code == 0
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    return RunFolder(out).read_summary(), records


def test_a_refusing_judge_is_counted_as_refusals_with_their_text(tmp_path: Path) -> None:
    with OpenAIStubServer(patch_completion=_refuse) as server:
        summary, records = _wise_run(tmp_path, server)
        asked = server.count("/chat/completions")
    assert {k: n for k, n in summary.failures.items() if n} == {"refusal": 3}
    assert summary.scores["failures"] == {"refusal": 3}
    assert asked == 3  # a refusal is not asked again: the same request would be refused again
    assert {r["judge_reply"] for r in records} == {"I can't help with grading that image."}
    assert all("refused" in r["detail"] for r in records)


def test_a_server_without_usage_gives_unknown_tokens_and_cost_in_the_summary(tmp_path: Path) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text(
        "openai/judge-vlm: {input_per_million: 1.0, output_per_million: 2.0}\nsim/umm: {per_image: 0.5}\n"
    )
    with OpenAIStubServer(include_usage=False, responder=lambda chat: "Score: 1") as server:
        summary, _ = _wise_run(tmp_path, server, "--prices", str(prices))
    judge = summary.usage["judge"]
    assert (judge["calls"], judge["input_tokens"], judge["output_tokens"]) == (3, None, None)
    cost = summary.cost
    assert cost is not None and cost.per_role == {"judge": None, "generate": 1.5} and cost.unknown_roles == ["judge"]
    assert cost.total is None and cost.known_total == 1.5


def test_a_server_refusing_an_extra_field_says_where_the_field_came_from() -> None:
    message = "Unrecognized request argument supplied: chat_template_kwargs"
    options = RequestOptions(extra_body={"chat_template_kwargs": {"enable_thinking": False}})
    with OpenAIStubServer(faults=[Fault.bad_request(message)]) as server:
        with pytest.raises(BackendError) as caught:
            run(f"openai/gpt-4o?base_url={server.base_url}", lambda b: b.respond(["a"], options=options))
    assert message in str(caught.value) and "judge_thinking=server" in str(caught.value)
    assert not caught.value.retryable


def test_an_image_request_blocked_by_the_safety_system_is_a_refusal() -> None:
    message = "Your request was rejected as a result of our safety system."
    with OpenAIStubServer(faults=[Fault.http(400, message, code="moderation_blocked")]) as server:
        with pytest.raises(Refusal) as caught:
            run(f"openai/gpt-image-1?base_url={server.base_url}", lambda b: b.generate(["a barn"]))
    assert caught.value.raw == message and caught.value.kind == "refusal"


def test_a_nodes_chat_template_kwargs_are_not_sent_to_openais_own_api() -> None:
    options = RequestOptions(system="s", extra_body={"chat_template_kwargs": {"enable_thinking": False}, "top_k": 3})
    hosted = OpenAIBackend(Spec.parse("openai/gpt-4o"))  # the default base URL: api.openai.com
    served = OpenAIBackend(Spec.parse("openai/Qwen/Qwen3-VL-8B-Instruct?base_url=http://gpu-box:8000/v1"))
    asked = OpenAIBackend(Spec.parse('openai/gpt-4o?extra_body={"chat_template_kwargs":{"x":1}}'))
    assert "chat_template_kwargs" not in hosted.requests.chat(["a"], max_tokens=5, seed=0, options=options)
    assert hosted.requests.chat(["a"], max_tokens=5, seed=0, options=options)["top_k"] == 3
    assert served.requests.chat(["a"], max_tokens=5, seed=0, options=options)["chat_template_kwargs"] == {
        "enable_thinking": False
    }
    assert asked.requests.chat(["a"], max_tokens=5, seed=0, options=options)["chat_template_kwargs"] == {
        "x": 1
    }  # the spec's own
