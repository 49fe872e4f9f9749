"""A hostile server cannot make umni use unbounded memory or time, nor feed it impossible numbers.

Each case talks to a real server on 127.0.0.1 (hostile_server.py) whose misbehaviour is bounded
and stops when the client hangs up; the assertions are on what was read and how the call failed,
never on wall-clock time.
"""

from __future__ import annotations

import base64
import json
import resource
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from hostile_server import (
    GIB,
    HostileServer,
    bomb_png,
    chat_with_usage,
    huge_chunked,
    image_reply,
    image_url_reply,
    trickle,
)

from tests.support.openai_server import with_openai_backend
from umni.run.evaluation import RunRequest, evaluate
from umni.util.errors import BackendError, ConfigError
from umni.util.spec import Spec
from umni_adapters.openai_http import OpenAIBackend

call = with_openai_backend


def failure(spec: str, action: Callable[[OpenAIBackend], Awaitable[Any]]) -> BackendError:
    with pytest.raises(BackendError) as caught:
        call(spec, action)
    return caught.value


def generate(backend: OpenAIBackend) -> Awaitable[Any]:
    return backend.generate(["a tree"])


def respond(backend: OpenAIBackend) -> Awaitable[Any]:
    return backend.respond(["hi"])


def test_an_image_bomb_is_refused_from_its_header_as_a_backend_failure():
    png = bomb_png(13000, 13000)
    assert len(png) < 64 * 1024  # tiny on the wire ...
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with HostileServer(image_reply(png)) as server:
        error = failure(f"openai/img?base_url={server.base_url}&timeout=10", generate)
    assert not error.retryable and "13000x13000" in str(error) and "max_pixels" in str(error)
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before
    assert grown_kib < 100 * 1024  # ... and never decoded (169 Mpx would be 169 MiB at least)


def data_url(payload: bytes, media: str = "image/png") -> str:
    return f"data:{media};base64," + base64.b64encode(payload).decode()


def test_a_data_url_image_bomb_is_refused_from_its_header_like_any_other_image():
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with HostileServer(image_url_reply(data_url(bomb_png(13000, 13000)))) as server:
        error = failure(f"openai/img?base_url={server.base_url}&timeout=10", generate)
        assert server.requests == 1  # decoded where it is, never fetched
    assert not error.retryable and "13000x13000" in str(error) and "max_pixels" in str(error)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before < 100 * 1024


def test_a_data_url_is_held_to_the_pixel_and_size_caps_of_the_spec():
    with HostileServer(image_url_reply(data_url(bomb_png(300, 300)))) as server:
        error = failure(f"openai/img?base_url={server.base_url}&timeout=10&max_pixels=10000", generate)
    assert "300x300" in str(error) and "max_pixels" in str(error) and not error.retryable
    # the image travels inside the reply, so the reply's size cap bounds it (decoded, it is smaller still)
    big = data_url(b"\x89PNG" + bytes(600_000))
    with HostileServer(image_url_reply(big)) as server:
        error = failure(f"openai/img?base_url={server.base_url}&timeout=10&max_response_bytes=500000", generate)
        assert server.requests == 1
    assert "too large" in str(error) and "max_response_bytes" in str(error) and not error.retryable


@pytest.mark.parametrize(
    ("url", "says"),
    [
        (data_url(b"GIF89a not really"), "data: URL"),
        ("data:text/plain;base64," + base64.b64encode(b"hello").decode(), "text/plain"),
        ("data:image/png;base64", "no comma"),
        ("data:image/png;base64,***", "base64"),
    ],
)
def test_a_bad_data_url_says_what_it_is_and_is_never_fetched(url, says):
    with HostileServer(image_url_reply(url)) as server:
        error = failure(f"openai/img?base_url={server.base_url}&timeout=10", generate)
        assert server.requests == 1
    assert "data: URL" in str(error) and says in str(error)
    assert len(str(error)) < 400  # the URL is not pasted into the message


def test_an_image_url_of_another_scheme_is_refused_without_fetching_it():
    with HostileServer(image_url_reply("file:///etc/passwd")) as server:
        error = failure(f"openai/img?base_url={server.base_url}&timeout=10", generate)
        assert server.requests == 1
    assert "data[0].url" in str(error) and "'file'" in str(error) and not error.retryable


def test_the_pixel_cap_is_a_spec_parameter(tmp_path):
    png = bomb_png(300, 300)
    with HostileServer(image_reply(png)) as server:
        error = failure(f"openai/img?base_url={server.base_url}&timeout=10&max_pixels=10000", generate)
    assert "300x300" in str(error) and not error.retryable
    with pytest.raises(ConfigError, match="max_pixels"):
        OpenAIBackend(Spec.parse("openai/img?max_pixels=-1"))


def test_a_1_gib_chunked_body_is_cut_off_at_the_size_cap():
    with HostileServer(huge_chunked(GIB)) as server:
        error = failure(f"openai/m?base_url={server.base_url}&timeout=60&max_response_bytes=1000000", respond)
        assert server.finished.wait(30)  # the server saw the client hang up
        sent = server.bytes_sent
    assert not error.retryable and "too large" in str(error) and "max_response_bytes" in str(error)
    assert sent < GIB // 8  # the body was abandoned early, not read to the end


def test_the_default_size_cap_bounds_a_1_gib_body():
    with HostileServer(huge_chunked(GIB)) as server:
        error = failure(f"openai/m?base_url={server.base_url}&timeout=120", respond)
        assert server.finished.wait(60)
        sent = server.bytes_sent
    assert "too large" in str(error)
    assert sent < GIB // 4


def test_a_trickling_server_is_stopped_by_the_attempt_deadline():
    # one byte every 50 ms: each read is well within timeout=1, only a whole-attempt deadline ends it
    with HostileServer(trickle(total=600, every=0.05)) as server:
        error = failure(f"openai/m?base_url={server.base_url}&timeout=1", respond)
        assert server.finished.wait(40)
        sent = server.bytes_sent
    assert error.retryable and "timeout" in str(error)
    assert sent < 300  # cut off after about 20 bytes, not after all 600


@pytest.mark.parametrize("usage", ['{"prompt_tokens": Infinity, "completion_tokens": 1}',
                                   '{"prompt_tokens": 1e999, "completion_tokens": 1}',
                                   '{"prompt_tokens": NaN, "completion_tokens": 1}'])  # fmt: skip
def test_non_finite_usage_is_a_backend_failure(usage):
    with HostileServer(chat_with_usage(usage)) as server:
        error = failure(f"openai/m?base_url={server.base_url}&timeout=5", respond)
    assert "malformed response" in str(error)


def test_negative_usage_fails_the_node_and_never_reaches_the_totals(tmp_path):
    with HostileServer(chat_with_usage('{"prompt_tokens": -500, "completion_tokens": 3}')) as server:
        request = RunRequest(protocol="umnibench", out=tmp_path / "run", cache=tmp_path / "cache", limit=1,
                             model=f"openai/m?base_url={server.base_url}&timeout=5&roles=understand",
                             roles=["generate=sim/umm", "edit=sim/umm"], progress=False)  # fmt: skip
        summary = evaluate(request).summary
    assert summary.failures["backend"] > 0 and summary.failures["internal"] == 0
    for role_usage in summary.usage.values():
        assert all(v is None or v >= 0 for v in role_usage.values()), role_usage
    messages = {n["failure"]["message"] for line in (tmp_path / "run/results.jsonl").read_text().split("\n") if line
                for n in json.loads(line)["nodes"].values() if "failure" in n}  # fmt: skip
    assert messages == {"the backend reported an invalid usage count: input_tokens=-500"}


def test_failure_messages_carry_no_object_addresses(tmp_path):
    """An undecodable image once failed with '<_io.BytesIO object at 0x…>', so identical runs wrote
    different results.jsonl; the message now names the data by size."""
    with HostileServer(image_reply(b"GIF89a not really")) as server:
        error = failure(f"openai/img?base_url={server.base_url}&timeout=5", generate)
    assert "object at 0x" not in str(error) and "17 bytes" in str(error)
