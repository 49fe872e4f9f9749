"""One spec, several servers of the same model (issue 14.3): calls spread across them under a
per-server limit, a server that fails is set aside for a cool-off while the call goes to another,
and the identity is the model's, not the URL list's nor the fleet's settings."""

from __future__ import annotations

import socket
import time
from collections.abc import Awaitable, Callable

import anyio
import pytest

from tests.support.openai_server import Fault, OpenAIStubServer
from umni.util.errors import BackendError
from umni.util.spec import Spec
from umni_adapters.openai_http import OpenAIBackend


def backend(*urls: str, **params: object) -> OpenAIBackend:
    extra = "".join(f"&{k}={v}" for k, v in params.items())
    return OpenAIBackend(Spec.parse(f"openai/served-model?base_url={','.join(urls)}&roles=understand{extra}"))


def refused_url() -> str:
    """A loopback URL nothing listens on (the port was free a moment ago): connections are refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


async def ask(made: OpenAIBackend, n: int) -> list[str]:
    replies: list[str] = []

    async def one(i: int) -> None:
        replies.append((await made.respond([f"question {i}"], seed=i)).text)

    async with anyio.create_task_group() as group:
        for i in range(n):
            group.start_soon(one, i)
    return replies


def on_started(made: OpenAIBackend, scenario: Callable[[OpenAIBackend], Awaitable[None]]) -> None:
    async def main() -> None:
        await made.start()
        try:
            await scenario(made)
        finally:
            await made.aclose()

    anyio.run(main)


def test_calls_spread_and_fail_over() -> None:
    with OpenAIStubServer(latency=0.05) as a, OpenAIStubServer(latency=0.05) as b:

        async def spread(made: OpenAIBackend) -> None:
            assert len(await ask(made, 8)) == 8
            assert a.count("/chat/completions") > 0 and b.count("/chat/completions") > 0

        on_started(backend(a.base_url, b.base_url), spread)
        down = b.base_url
        b.stop()  # the second server goes down; listed first, the first call is refused there and goes on
        before = a.count("/chat/completions")

        async def survive(made: OpenAIBackend) -> None:
            assert len(await ask(made, 4)) == 4

        on_started(backend(down, a.base_url), survive)
        assert a.count("/chat/completions") == before + 4


def test_sequential_calls_take_turns() -> None:
    with OpenAIStubServer() as a, OpenAIStubServer() as b, OpenAIStubServer() as c:

        async def one_at_a_time(made: OpenAIBackend) -> None:
            for i in range(6):
                await made.respond([f"q{i}"])

        on_started(backend(a.base_url, b.base_url, c.base_url), one_at_a_time)
        assert [s.count("/chat/completions") for s in (a, b, c)] == [2, 2, 2]


def test_an_image_handed_out_by_url_is_fetched_from_the_server_that_made_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLEET_KEY", "fleet-key")
    with OpenAIStubServer(api_key="fleet-key") as a, OpenAIStubServer(api_key="fleet-key") as b:
        spec = f"openai/served-model?base_url={a.base_url},{b.base_url}&api_key_env=FLEET_KEY&response_format=url"

        async def draw(made: OpenAIBackend) -> None:
            for prompt in ("a red square", "a blue circle"):  # one on each server
                assert (await made.generate([prompt])).image.size == (64, 64)

        on_started(OpenAIBackend(Spec.parse(spec)), draw)
        for server in (a, b):  # the key went along: the server that made the image handed it out
            assert server.count("/images/generations") == 1
            assert server.last(".png").status == 200


# -- per-endpoint limits ---------------------------------------------------------------------------


def test_each_server_gets_at_most_per_endpoint_calls() -> None:
    servers = [OpenAIStubServer(latency=0.1).start() for _ in range(3)]
    try:
        made = backend(*(s.base_url for s in servers), per_endpoint=2)
        assert made.concurrency == 6 and made.pooled  # the lane spans the fleet
        replies: list[str] = []

        async def flood(made: OpenAIBackend) -> None:
            replies.extend(await ask(made, 18))

        on_started(made, flood)
        assert len(replies) == 18
        assert [s.peak_concurrency for s in servers] == [2, 2, 2]
        assert [s.count("/chat/completions") for s in servers] == [6, 6, 6]
    finally:
        for server in servers:
            server.stop()


def test_calls_wait_for_a_slot_instead_of_overloading_the_survivor() -> None:
    with OpenAIStubServer(latency=0.05) as healthy:
        made = backend(refused_url(), healthy.base_url, per_endpoint=2)

        async def flood(made: OpenAIBackend) -> None:
            assert len(await ask(made, 8)) == 8  # twice the lane's worth of calls for a fleet of two

        on_started(made, flood)
        assert healthy.peak_concurrency == 2
        assert healthy.count("/chat/completions") == 8


def test_concurrency_defaults() -> None:
    urls = ("http://127.0.0.1:1/v1", "http://127.0.0.1:2/v1", "http://127.0.0.1:3/v1")
    assert backend(urls[0]).concurrency == 4  # one server: the backend default, unchanged
    assert backend(*urls).concurrency == 12  # a fleet without a cap: the default on each server
    assert not backend(*urls).pooled  # ... and a run-wide --concurrency still applies to it
    assert backend(*urls, per_endpoint=3).concurrency == 9
    assert backend(*urls, per_endpoint=3, concurrency=5).concurrency == 5  # the user's number wins


# -- failover --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fault", [Fault.unavailable(), Fault.server_error(502), Fault.server_error(504), Fault.reset()]
)
def test_a_failing_server_is_set_aside_and_the_call_goes_on(fault: Fault) -> None:
    with OpenAIStubServer(faults=[fault]) as sick, OpenAIStubServer() as healthy:

        async def calls(made: OpenAIBackend) -> None:
            for i in range(4):
                assert (await made.respond([f"q{i}"])).text == f"images=0 text=q{i}"

        on_started(backend(sick.base_url, healthy.base_url, cool_off=30), calls)
        assert sick.count() == 1  # tried first, then cooling off for the rest
        assert healthy.count() == 4


def test_a_server_past_the_timeout_is_set_aside() -> None:
    with OpenAIStubServer(faults=[Fault.stall(2.0)]) as slow, OpenAIStubServer() as healthy:

        async def calls(made: OpenAIBackend) -> None:
            assert (await made.respond(["q"])).text == "images=0 text=q"
            assert (await made.respond(["r"])).text == "images=0 text=r"

        on_started(backend(slow.base_url, healthy.base_url, timeout=0.3), calls)
        assert slow.count() == 1 and healthy.count() == 2


def test_a_rate_limited_server_is_left_alone_for_as_long_as_it_asks() -> None:
    with OpenAIStubServer(faults=[Fault.rate_limit(retry_after="0.4")]) as limited, OpenAIStubServer() as other:

        async def calls(made: OpenAIBackend) -> None:
            await made.respond(["first"])  # 429 at `limited`, answered by `other`
            await made.respond(["second"])
            assert (limited.count(), other.count()) == (1, 2)
            await anyio.sleep(0.5)
            await made.respond(["third"])
            await made.respond(["fourth"])

        on_started(backend(limited.base_url, other.base_url, cool_off=30), calls)
        assert limited.count() == 2  # back after its 0.4 s, not the 30 s cool-off


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_a_request_refused_on_its_merits_is_not_sent_elsewhere(status: int) -> None:
    with OpenAIStubServer(faults=[Fault.http(status, "this request is wrong")]) as first, OpenAIStubServer() as second:

        async def call(made: OpenAIBackend) -> None:
            with pytest.raises(BackendError) as caught:
                await made.respond(["q"])
            assert f"HTTP {status}" in str(caught.value) and "this request is wrong" in str(caught.value)
            assert not caught.value.retryable
            assert first.base_url.removesuffix("/v1").removeprefix("http://") in str(caught.value)
            assert second.count() == 0  # not sent elsewhere: it would fail there too
            await made.respond(["again"])
            await made.respond(["and again"])  # turns come back to `first`: it was not set aside
            assert (first.count(), second.count()) == (2, 1)

        on_started(backend(first.base_url, second.base_url), call)


def test_when_every_server_is_down_the_error_is_retryable_and_names_them() -> None:
    faults = [Fault.unavailable()] * 5
    with OpenAIStubServer(faults=faults) as a, OpenAIStubServer(faults=faults) as b:
        dead = refused_url()
        urls = [a.base_url, b.base_url, dead]

        async def call(made: OpenAIBackend) -> None:
            with pytest.raises(BackendError) as caught:
                await made.respond(["q"])
            error = caught.value
            assert error.retryable
            assert error.retry_after is not None and 9 < error.retry_after <= 10  # the default cool-off
            for url in (a.base_url, b.base_url, dead):
                assert url in str(error)
            assert "HTTP 503" in str(error) and "connection failed" in str(error)
            started = time.monotonic()
            with pytest.raises(BackendError):
                await made.respond(["again"])  # all cooling off: fails at once, sending nothing
            assert time.monotonic() - started < 1.0 and a.count() == b.count() == 1

        on_started(backend(*urls), call)


def test_a_server_comes_back_after_its_cool_off() -> None:
    with OpenAIStubServer(faults=[Fault.unavailable()]) as flaky, OpenAIStubServer() as steady:

        async def calls(made: OpenAIBackend) -> None:
            for i in range(3):
                await made.respond([f"q{i}"])
            assert (flaky.count(), steady.count()) == (1, 3)
            await anyio.sleep(0.35)
            for i in range(4):
                await made.respond([f"r{i}"])

        on_started(backend(flaky.base_url, steady.base_url, cool_off=0.3), calls)
        assert flaky.count() == 3 and flaky.last().status == 200  # used again, and answering
        assert steady.count() == 5


def test_a_lone_server_keeps_todays_errors() -> None:
    with OpenAIStubServer(faults=[Fault.unavailable(), None]) as only:

        async def calls(made: OpenAIBackend) -> None:
            with pytest.raises(BackendError) as caught:
                await made.respond(["q"])
            assert "HTTP 503" in str(caught.value) and caught.value.retryable
            await made.respond(["q"])  # no cool-off for a lone server: the engine's retry goes straight back

        on_started(backend(only.base_url), calls)
        assert only.count() == 2


# -- identity --------------------------------------------------------------------------------------


def test_identity_is_the_model_not_the_urls() -> None:
    one = backend("http://127.0.0.1:1/v1", "http://127.0.0.1:2/v1")
    other = backend("http://127.0.0.1:3/v1", "http://127.0.0.1:4/v1", "http://127.0.0.1:5/v1")
    assert one.identity() == other.identity()
    assert "endpoint" not in one.identity()


def test_fleet_settings_are_not_identity() -> None:
    urls = ("http://127.0.0.1:1/v1", "http://127.0.0.1:2/v1")
    plain = backend(*urls)
    tuned = backend(*urls, per_endpoint=8, cool_off=2.5)
    assert tuned.identity() == plain.identity()
    assert tuned.identity_hash() == plain.identity_hash()
    assert backend(*urls, temperature=0.5).identity_hash() != plain.identity_hash()  # a real parameter still counts


@pytest.mark.parametrize("bad", ["per_endpoint=0", "cool_off=0", "cool_off=-1", "per_endpoint=two"])
def test_bad_fleet_settings_are_refused(bad: str) -> None:
    from umni.util.errors import ConfigError

    with pytest.raises(ConfigError, match=bad.split("=")[0]):
        OpenAIBackend(Spec.parse(f"openai/m?base_url=http://127.0.0.1:1/v1&{bad}"))
