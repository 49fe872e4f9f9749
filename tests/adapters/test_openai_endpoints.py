"""One spec, several servers of the same model (issue 14.3): calls spread across them, a server
that goes down is passed over, and the identity is the model's, not the URL list's."""

from __future__ import annotations

import anyio

from tests.support.openai_server import OpenAIStubServer
from umni.spec import Spec
from umni_adapters.openai_http import OpenAIBackend


def backend(*urls: str) -> OpenAIBackend:
    return OpenAIBackend(Spec.parse(f"openai/served-model?base_url={','.join(urls)}&roles=understand"))


async def ask(made: OpenAIBackend, n: int) -> list[str]:
    replies: list[str] = []

    async def one(i: int) -> None:
        replies.append((await made.respond([f"question {i}"], seed=i)).text)

    async with anyio.create_task_group() as group:
        for i in range(n):
            group.start_soon(one, i)
    return replies


def test_calls_spread_and_fail_over() -> None:
    with OpenAIStubServer(latency=0.05) as a, OpenAIStubServer(latency=0.05) as b:

        async def scenario() -> None:
            made = backend(a.base_url, b.base_url)
            await made.start()
            try:
                assert len(await ask(made, 8)) == 8
                assert a.count("/chat/completions") > 0 and b.count("/chat/completions") > 0
            finally:
                await made.aclose()
            down = b.base_url
            b.stop()  # the second server goes down; listed first, each call is refused there and goes on
            survivor = backend(down, a.base_url)
            await survivor.start()
            try:
                before = a.count("/chat/completions")
                assert len(await ask(survivor, 4)) == 4
                assert a.count("/chat/completions") == before + 4
            finally:
                await survivor.aclose()

        anyio.run(scenario)


def test_identity_is_the_model_not_the_urls() -> None:
    one = backend("http://127.0.0.1:1/v1", "http://127.0.0.1:2/v1")
    other = backend("http://127.0.0.1:3/v1", "http://127.0.0.1:4/v1", "http://127.0.0.1:5/v1")
    assert one.identity() == other.identity()
    assert "endpoint" not in one.identity()
