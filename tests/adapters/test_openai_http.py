"""The OpenAI-compatible backend against a real HTTP server that answers and fails on a schedule."""

from __future__ import annotations

import base64
import io
import json
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import anyio
import pytest
from PIL import Image, ImageChops, ImageOps

from tests.support.openai_server import ChatRequest, Fault, OpenAIStubServer, draw_from_prompt, with_openai_backend
from umni.backends.roles import EDIT, GENERATE, JUDGE, UNDERSTAND
from umni.util.errors import BackendError, ConfigError
from umni.util.spec import Spec
from umni_adapters.openai_http import OpenAIBackend, parse_option_letter

SECRET = "sk-test-0123456789abcdefSECRET"


run = with_openai_backend


def failure(spec: str, action: Callable[[OpenAIBackend], Awaitable[Any]]) -> BackendError:
    with pytest.raises(BackendError) as caught:
        run(spec, action)
    return caught.value


def solid(color: tuple[int, int, int], size: tuple[int, int] = (8, 6)) -> Image.Image:
    return Image.new("RGB", size, color)


def same_pixels(a: Image.Image, b: Image.Image) -> bool:
    return a.size == b.size and ImageChops.difference(a.convert("RGB"), b.convert("RGB")).getbbox() is None


def decode_data_uri(url: str) -> Image.Image:
    prefix = "data:image/png;base64,"
    assert url.startswith(prefix)
    return Image.open(io.BytesIO(base64.b64decode(url[len(prefix) :])))


def chat(prompt: str, options: list[str]) -> Callable[[OpenAIBackend], Awaitable[Any]]:
    return lambda b: b.choose([prompt], options)


# -- answering ---------------------------------------------------------------------------------------


def test_choose_reads_the_letter_and_sends_images_interleaved_in_order() -> None:
    red, blue = solid((255, 0, 0)), solid((0, 0, 255), (5, 7))
    parts = [red, "and then", blue, "Which animal is shown?"]
    with OpenAIStubServer(answer_word="cat") as server:
        reply = run(
            f"openai/stub-vlm?base_url={server.base_url}", lambda b: b.choose(parts, ["a dog", "a cat", "a fish"])
        )
        sent = server.last("/chat/completions").json

    assert (reply.index, reply.mode, reply.text) == (1, "letter", "Answer: B")
    content = sent["messages"][0]["content"]
    assert [p["type"] for p in content] == ["image_url", "text", "image_url", "text", "text"]
    assert same_pixels(decode_data_uri(content[0]["image_url"]["url"]), red)
    assert same_pixels(decode_data_uri(content[2]["image_url"]["url"]), blue)
    assert content[1]["text"] == "and then"
    assert "A. a dog\nB. a cat\nC. a fish" in content[4]["text"]
    assert sent["model"] == "stub-vlm"
    # prompt words: "and then" 2 + question 4 + options block words; 10 per image in the stub's count.
    option_words = len(content[4]["text"].split())
    assert reply.usage.input_tokens == 2 + 4 + option_words + 2 * 10
    assert (reply.usage.output_tokens, reply.usage.images_in, reply.usage.calls) == (2, 2, 1)


def test_an_unparseable_choice_is_none_not_a_guess() -> None:
    with OpenAIStubServer(responder=lambda chat: "I cannot tell from this picture.") as server:
        reply = run(f"openai/m?base_url={server.base_url}", chat("Which?", ["red", "green", "blue"]))
    assert (reply.index, reply.mode) == (None, "letter")
    assert reply.text == "I cannot tell from this picture."


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("B", 1),
        ("(c)", 2),
        ("**B.**", 1),
        ("The answer is C.", 2),
        ("Answer: a", 0),
        ("I believe D is right", None),  # a loose capital is not a clear answer (umni.choices)
        ("a cat", 1),  # the exact option text
        ("A", 0),
        ("E", None),  # not one of four options
        ("B or C", None),  # names two
        ("none of these", None),
        ("", None),
    ],
)
def test_letter_parsing(reply: str, expected: int | None) -> None:
    assert parse_option_letter(reply, ["a dog", "a cat", "a fish", "a bird"]) == expected


def test_respond_returns_the_text_and_usage() -> None:
    with OpenAIStubServer() as server:
        reply = run(
            f"openai/m?base_url={server.base_url}&temperature=0&max_tokens=64",
            lambda b: b.respond(["describe", solid((1, 2, 3)), "this image briefly"], max_tokens=512, seed=7),
        )
        sent = server.last("/chat/completions").json
    assert reply.text == "images=1 text=describe | this image briefly"
    assert (reply.usage.input_tokens, reply.usage.output_tokens, reply.usage.images_in) == (1 + 3 + 10, 6, 1)
    # spec max_tokens overrides the caller's; temperature only sent because the spec names it.
    assert (sent["max_tokens"], sent["temperature"], sent["seed"]) == (64, 0.0, 7)


def test_a_server_without_usage_still_answers() -> None:
    with OpenAIStubServer(include_usage=False, answer_word="fish") as server:
        reply = run(f"openai/m?base_url={server.base_url}", chat("Q", ["dog", "fish"]))
        sent = server.last("/chat/completions").json
    assert reply.index == 1
    assert (reply.usage.calls, reply.usage.input_tokens, reply.usage.output_tokens) == (1, None, None)  # unknown, not 0
    assert "temperature" not in sent  # server default unless the spec names one


def test_likelihood_mode_scores_option_letters_by_logprob() -> None:
    with OpenAIStubServer(answer_word="fish") as server:
        reply = run(f"openai/m?base_url={server.base_url}&mode=likelihood", chat("Q", ["dog", "cat", "fish"]))
        sent = server.last("/chat/completions").json
    assert (reply.index, reply.mode) == (2, "likelihood")
    assert (sent["logprobs"], sent["max_tokens"]) == (True, 1)


def test_usage_accumulates_on_the_backend() -> None:
    async def two_calls(b: OpenAIBackend) -> Any:
        await b.respond(["one two"])
        await b.respond(["three"])
        return b.total_usage

    with OpenAIStubServer() as server:
        total = run(f"openai/m?base_url={server.base_url}", two_calls)
    # replies: "images=0 text=one two" (3 words) and "images=0 text=three" (2 words)
    assert (total.calls, total.input_tokens, total.output_tokens) == (2, 3, 5)


# -- images ------------------------------------------------------------------------------------------


def test_generate_round_trip_from_b64_json() -> None:
    with OpenAIStubServer() as server:
        reply = run(f"openai/img?base_url={server.base_url}&size=48x32", lambda b: b.generate(["a red", "barn"]))
        sent = server.last("/images/generations").json
    assert same_pixels(reply.image, draw_from_prompt("a red\nbarn", (48, 32)))
    assert (sent["prompt"], sent["size"], sent["n"]) == ("a red\nbarn", "48x32", 1)
    assert (reply.usage.images_out, reply.usage.images_in) == (1, 0)


def test_generate_fetches_an_image_returned_by_url() -> None:
    with OpenAIStubServer() as server:
        reply = run(f"openai/img?base_url={server.base_url}&response_format=url", lambda b: b.generate(["lighthouse"]))
        fetched = [r for r in server.requests if r.method == "GET"]
    assert same_pixels(reply.image, draw_from_prompt("lighthouse"))
    assert len(fetched) == 1 and fetched[0].path.startswith("/v1/files/")


def test_an_image_returned_as_a_data_url_is_decoded_without_a_request() -> None:
    # Issue 25 item 11: a data: URL used to be fetched as a path on the API server (a ~900-character
    # GET) and then failed as "not an image". It carries the image itself.
    with OpenAIStubServer(data_urls=True) as server:
        spec = f"openai/img?base_url={server.base_url}&response_format=url"
        made = run(spec, lambda b: b.generate(["lighthouse"]))
        edited = run(spec, lambda b: b.edit([draw_from_prompt("source")], "invert it"))
        assert [r.method for r in server.requests] == ["POST", "POST"]  # no GET of any kind
    assert same_pixels(made.image, draw_from_prompt("lighthouse"))
    assert same_pixels(edited.image, ImageOps.invert(draw_from_prompt("source")))


def test_edit_round_trip_sends_multipart_and_returns_the_result() -> None:
    source = draw_from_prompt("source", (40, 30))
    with OpenAIStubServer() as server:
        reply = run(f"openai/img?base_url={server.base_url}", lambda b: b.edit([source], "invert it"))
        sent = server.last("/images/edits")
    assert same_pixels(reply.image, ImageOps.invert(source))
    assert sent.form["prompt"] == "invert it" and sent.form["model"] == "img"
    assert [(name, size > 0) for name, _, size in sent.files] == [("image", True)]
    assert (reply.usage.images_in, reply.usage.images_out) == (1, 1)


def test_edit_with_several_images_and_generate_with_an_image_prompt_use_edits() -> None:
    first, second = draw_from_prompt("one"), draw_from_prompt("two")
    with OpenAIStubServer() as server:
        both = run(f"openai/img?base_url={server.base_url}", lambda b: b.edit([first, second], "merge"))
        files = server.last("/images/edits").files
        guided = run(f"openai/img?base_url={server.base_url}", lambda b: b.generate(["like this", second]))
        assert server.count("/images/generations") == 0
    assert [name for name, _, _ in files] == ["image[]", "image[]"]
    assert same_pixels(both.image, ImageOps.invert(first))  # the stub edits the first image
    assert same_pixels(guided.image, ImageOps.invert(second))


# -- failures ----------------------------------------------------------------------------------------


def test_429_with_retry_after_seconds_is_retryable_and_not_retried_by_the_backend() -> None:
    with OpenAIStubServer(faults=[Fault.rate_limit(retry_after="7")]) as server:
        error = failure(f"openai/m?base_url={server.base_url}", chat("Q", ["x", "y"]))
        assert server.count() == 1  # one attempt, one error: the engine owns retries
    assert (error.retryable, error.retry_after) == (True, 7.0)
    assert "429" in str(error) and "Rate limit reached" in str(error)


def test_429_with_an_http_date_and_without_retry_after() -> None:
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    with OpenAIStubServer(faults=[Fault.rate_limit(retry_after=when), Fault.rate_limit()]) as server:
        dated = failure(f"openai/m?base_url={server.base_url}", chat("Q", ["x", "y"]))
        bare = failure(f"openai/m?base_url={server.base_url}", chat("Q", ["x", "y"]))
    assert dated.retryable and dated.retry_after is not None and 25.0 <= dated.retry_after <= 30.0
    assert bare.retryable and bare.retry_after is None


@pytest.mark.parametrize("fault", [Fault.unavailable(), Fault.server_error(500), Fault.server_error(502)])
def test_server_errors_are_retryable(fault: Fault) -> None:
    with OpenAIStubServer(faults=[fault]) as server:
        error = failure(f"openai/m?base_url={server.base_url}", lambda b: b.respond(["hi"]))
    assert error.retryable and f"HTTP {fault.status}" in str(error)


def test_503_then_success_on_the_next_attempt() -> None:
    with OpenAIStubServer(faults=[Fault.unavailable(retry_after="1")], answer_word="yes") as server:
        error = failure(f"openai/m?base_url={server.base_url}", chat("Q", ["no", "yes"]))
        reply = run(f"openai/m?base_url={server.base_url}", chat("Q", ["no", "yes"]))
    assert (error.retryable, error.retry_after, reply.index) == (True, 1.0, 1)


def test_connection_reset_is_retryable() -> None:
    with OpenAIStubServer(faults=[Fault.reset()]) as server:
        error = failure(f"openai/m?base_url={server.base_url}", lambda b: b.respond(["hi"]))
    assert error.retryable and "connection failed" in str(error)


def test_connection_refused_is_retryable() -> None:
    with OpenAIStubServer() as server:
        dead_url = server.base_url  # nothing listens here once the server stops
    error = failure(f"openai/m?base_url={dead_url}&timeout=2", lambda b: b.respond(["hi"]))
    assert error.retryable


def test_a_stalled_server_times_out_quickly_and_retryably() -> None:
    with OpenAIStubServer(faults=[Fault.stall(5.0)]) as server:
        started = time.monotonic()
        error = failure(f"openai/m?base_url={server.base_url}&timeout=0.3", lambda b: b.respond(["hi"]))
        elapsed = time.monotonic() - started
    assert error.retryable and "timeout" in str(error)
    assert elapsed < 2.5


def test_a_400_is_final_and_carries_the_servers_message() -> None:
    message = "The model `m` does not exist or you do not have access to it."
    with OpenAIStubServer(faults=[Fault.bad_request(message)]) as server:
        error = failure(f"openai/m?base_url={server.base_url}", lambda b: b.respond(["hi"]))
    assert not error.retryable and error.retry_after is None
    assert message in str(error) and "HTTP 400" in str(error)


def test_malformed_json_is_a_retryable_error_not_a_crash() -> None:
    with OpenAIStubServer(faults=[Fault.malformed_json()]) as server:
        error = failure(f"openai/m?base_url={server.base_url}", chat("Q", ["x", "y"]))
    assert error.retryable and "not JSON" in str(error)


@pytest.mark.parametrize("call", ["generate", "edit"])
def test_undecodable_image_bytes_are_retryable(call: str) -> None:
    action: Callable[[OpenAIBackend], Awaitable[Any]] = (
        (lambda b: b.generate(["x"])) if call == "generate" else (lambda b: b.edit([solid((9, 9, 9))], "x"))
    )
    with OpenAIStubServer(faults=[Fault.bad_image()]) as server:
        error = failure(f"openai/img?base_url={server.base_url}", action)
    assert error.retryable and "does not decode" in str(error)


# -- secrets, identity and spec ----------------------------------------------------------------------


def test_the_api_key_is_sent_but_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UMNI_STUB_KEY", SECRET)
    leaky = Fault.bad_request(f"Incorrect API key provided: {SECRET}")  # a server that echoes the key
    with OpenAIStubServer(faults=[None, leaky], api_key=SECRET, answer_word="b") as server:
        spec = f"openai/m?base_url={server.base_url}&api_key_env=UMNI_STUB_KEY"
        ok = run(spec, chat("Q", ["a", "b"]))
        error = failure(spec, lambda b: b.respond(["hi"]))
        assert [r.authorization for r in server.requests] == [f"Bearer {SECRET}"] * 2
        assert all("authorization" not in r.headers for r in server.requests)
    backend = OpenAIBackend(Spec.parse(spec))
    assert ok.index == 1
    assert SECRET not in str(error) and "***" in str(error) and not error.retryable
    assert SECRET not in json.dumps(backend.identity()) and SECRET not in repr(backend)


def test_a_wrong_key_is_a_final_401(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UMNI_STUB_KEY", "sk-wrong")
    with OpenAIStubServer(api_key=SECRET) as server:
        error = failure(f"openai/m?base_url={server.base_url}&api_key_env=UMNI_STUB_KEY", lambda b: b.respond(["hi"]))
    assert not error.retryable and "HTTP 401" in str(error) and "sk-wrong" not in str(error)


def test_no_key_sends_no_authorization_header(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with OpenAIStubServer() as server:
        run(f"openai/m?base_url={server.base_url}", lambda b: b.respond(["hi"]))
        assert server.last().authorization is None


def test_identity_keeps_output_params_and_drops_operational_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("K", SECRET)
    base = "openai/gpt-x?base_url=http://10.0.0.5:8000/v1&temperature=0.2&size=512x512&quality=high"
    slow = OpenAIBackend(Spec.parse(base + "&timeout=600&api_key_env=K&concurrency=16&roles=judge"))
    fast = OpenAIBackend(Spec.parse(base + "&timeout=5"))
    other_port = OpenAIBackend(Spec.parse(base.replace(":8000", ":8001")))
    hotter = OpenAIBackend(Spec.parse(base.replace("temperature=0.2", "temperature=1")))
    assert slow.identity() == {
        "provider": "openai",
        "name": "gpt-x",
        "endpoint": "http://10.0.0.5:8000/v1",
        "params": {"temperature": "0.2", "size": "512x512", "quality": "high"},
    }
    assert slow.identity_hash() == fast.identity_hash()
    assert other_port.identity_hash() != fast.identity_hash()  # another server on the same host (issue 10.2)
    assert hotter.identity_hash() != fast.identity_hash()


def test_roles_param_restricts_what_the_backend_fills() -> None:
    assert OpenAIBackend(Spec.parse("openai/m")).fills() == {UNDERSTAND, JUDGE, GENERATE, EDIT}
    assert OpenAIBackend(Spec.parse("openai/m?roles=understand,judge")).fills() == {UNDERSTAND, JUDGE}


@pytest.mark.parametrize(
    ("spec", "complaint"),
    [
        ("openai/m?roles=understand,ocr", "roles"),
        ("openai/m?temprature=0", "unknown parameter"),
        ("openai/m?timeout=0", "timeout"),
        ("openai/m?max_tokens=1.5", "max_tokens"),
        ("openai/m?mode=vote", "mode"),
        ("openai/m?base_url=localhost:8000", "base_url"),
        ("openai/m?api_key_env=UMNI_SURELY_UNSET_VAR", "UMNI_SURELY_UNSET_VAR"),
    ],
)
def test_bad_specs_fail_at_construction(spec: str, complaint: str) -> None:
    with pytest.raises(ConfigError, match=complaint):
        OpenAIBackend(Spec.parse(spec))


def test_calling_before_start_is_a_clear_final_error() -> None:
    backend = OpenAIBackend(Spec.parse("openai/m?base_url=http://127.0.0.1:9/v1"))
    with pytest.raises(BackendError, match="start") as caught:
        anyio.run(lambda: backend.respond(["hi"]))
    assert not caught.value.retryable


def test_custom_responder_sees_the_request() -> None:
    seen: list[ChatRequest] = []

    def responder(request: ChatRequest) -> str:
        seen.append(request)
        return "C"

    with OpenAIStubServer(responder=responder) as server:
        reply = run(
            f"openai/m?base_url={server.base_url}", lambda b: b.choose([solid((0, 0, 0)), "Q"], ["x", "y", "z"])
        )
    assert reply.index == 2
    assert seen[0].part_kinds == ["image", "text", "text"]


def test_calls_run_concurrently_and_the_server_counts_them() -> None:
    async def three_at_once(b: OpenAIBackend) -> list[str]:
        texts: list[str] = []

        async def one(i: int) -> None:
            texts.append((await b.respond([f"call {i}"])).text)

        async with anyio.create_task_group() as group:
            for i in range(3):
                group.start_soon(one, i)
        return sorted(texts)

    with OpenAIStubServer(latency=0.3) as server:
        texts = run(f"openai/m?base_url={server.base_url}", three_at_once)
        # All three were in the server at once: the client does not serialise calls.
        assert (server.count("/chat/completions"), server.peak_concurrency) == (3, 3)
    assert texts == [f"images=0 text=call {i}" for i in range(3)]
