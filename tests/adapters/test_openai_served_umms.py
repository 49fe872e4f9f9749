"""Served UMMs through the openai/ backend (issue 32): images through chat completions as vLLM-Omni
serves BAGEL, the images endpoints with vLLM-Omni's and SGLang's per-request fields, image_api=auto,
identity, bounded replies and the missing key. Every server is a real one on 127.0.0.1 in the shape
the public server's code gives (tests/support/omni_server.py says where each shape was read)."""

from __future__ import annotations

import base64
import io
import json
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest
from PIL import Image

from tests.reliability.hostile_server import HostileServer, send_json
from tests.support.omni_server import NO_IMAGE_TEXT, OmniServer, png_b64
from tests.support.openai_server import OpenAIStubServer, with_openai_backend
from umni.plugin import EDIT, GENERATE, JUDGE, UNDERSTAND, BackendError, ConfigError, ParseFailure, Refusal
from umni.util.spec import Spec
from umni_adapters.openai_http import OpenAIBackend

BAGEL = "ByteDance-Seed/BAGEL-7B-MoT"
IMAGE_ROLES = frozenset({GENERATE, EDIT})


def settled(spec: str, action: Callable[[OpenAIBackend], Awaitable[Any]], roles: frozenset[str] = IMAGE_ROLES) -> tuple[dict[str, Any], Any]:
    """As a run uses the backend: settled for `roles` before anything, then started, then `action`."""

    async def main() -> tuple[dict[str, Any], Any]:
        backend = OpenAIBackend(Spec.parse(spec))
        record = await backend.settle(roles)
        await backend.start()
        try:
            return record, await action(backend)
        finally:
            await backend.aclose()

    return anyio.run(main)


def picture(color: tuple[int, int, int], size: tuple[int, int] = (40, 30)) -> Image.Image:
    return Image.new("RGB", size, color)


def decoded(data_url: str) -> Image.Image:
    return Image.open(io.BytesIO(base64.b64decode(data_url.split(",", 1)[1])))


# -- images through chat completions (vLLM-Omni's shape) -------------------------------------------


def test_chat_drawing_sends_modalities_the_node_seed_and_the_diffusion_fields_at_the_top_level() -> None:
    with OmniServer(images_endpoints=False) as server:
        spec = (f"openai/{BAGEL}?base_url={server.base_url}&image_api=chat&width=96&height=80&steps=30&guidance=4.5"
                "&negative_prompt=blurry")
        _, reply = settled(spec, lambda b: b.generate(["a red cube", "left of a ball"], seed=1234))
        sent = server.requests("/chat/completions")[0].json
    assert sent["modalities"] == ["image"] and sent["seed"] == 1234
    assert (sent["width"], sent["height"], sent["num_inference_steps"], sent["guidance_scale"], sent["negative_prompt"]) == (
        96, 80, 30, 4.5, "blurry")
    assert sent["messages"] == [{"role": "user", "content": [{"type": "text", "text": "a red cube"},
                                                             {"type": "text", "text": "left of a ball"}]}]
    assert "prompt" not in sent and "n" not in sent and "size" not in sent
    assert reply.image.size == (96, 80) and reply.usage.images_out == 1 and reply.usage.calls == 1


def test_an_edit_through_chat_sends_the_instruction_then_its_images_as_image_url_parts() -> None:
    first, second = picture((200, 0, 0)), picture((0, 0, 200), (20, 20))
    with OmniServer(images_endpoints=False) as server:
        _, reply = settled(f"openai/{BAGEL}?base_url={server.base_url}&image_api=chat",
                           lambda b: b.edit([first, second], "put them side by side", seed=9))
        sent = server.requests("/chat/completions")[0].json
    content = sent["messages"][0]["content"]
    assert [part["type"] for part in content] == ["text", "image_url", "image_url"]
    assert content[0]["text"] == "put them side by side" and sent["seed"] == 9 and sent["modalities"] == ["image"]
    assert [decoded(part["image_url"]["url"]).getpixel((0, 0)) for part in content[1:]] == [(200, 0, 0), (0, 0, 200)]
    assert reply.image.size == first.size and reply.usage.images_in == 2


def test_interleaved_context_images_stay_in_their_place_through_chat() -> None:
    with OmniServer(images_endpoints=False) as server:
        settled(f"openai/{BAGEL}?base_url={server.base_url}&image_api=chat",
                lambda b: b.generate(["before", picture((1, 2, 3)), "after"], seed=0))
        content = server.requests("/chat/completions")[0].json["messages"][0]["content"]
    assert [part["type"] for part in content] == ["text", "image_url", "text"]
    assert not server.requests("/images/edits")


def test_a_reply_with_its_text_and_its_image_in_different_choices_gives_the_image() -> None:
    with OmniServer(images_endpoints=False, split_choices=True, responder=lambda texts: "I drew a cube.") as server:
        _, reply = settled(f"openai/{BAGEL}?base_url={server.base_url}&image_api=chat&width=32&height=32",
                           lambda b: b.generate(["a cube"], seed=1))
    assert reply.image.size == (32, 32)


def test_a_server_that_ignores_modalities_is_a_parse_failure_naming_what_came_back() -> None:
    with OmniServer(images_endpoints=False, chat_images=False, responder=lambda texts: "Here is a cube: ■") as server:
        with pytest.raises(ParseFailure) as caught:
            settled(f"openai/Qwen/Qwen2.5-VL-7B-Instruct?base_url={server.base_url}&image_api=chat",
                    lambda b: b.generate(["a cube"], seed=1))
    assert "text only: 'Here is a cube: ■'" in str(caught.value) and "ignores modalities" in str(caught.value)
    assert caught.value.raw == "Here is a cube: ■" and caught.value.kind == "parse"


def test_a_server_that_produced_no_image_says_so() -> None:
    with OmniServer(images_endpoints=False, draw_nothing=True) as server:
        with pytest.raises(ParseFailure, match="no images were produced"):
            settled(f"openai/{BAGEL}?base_url={server.base_url}&image_api=chat", lambda b: b.generate(["a cube"], seed=1))
    assert NO_IMAGE_TEXT.startswith("Image generation completed")


def test_a_refusal_in_place_of_the_image_is_a_refusal() -> None:
    def refuse(completion: dict[str, Any]) -> None:
        completion["choices"][0]["message"].update(content=None, refusal="I can't draw that.")

    with OpenAIStubServer(patch_completion=refuse) as server:
        with pytest.raises(Refusal) as caught:
            settled(f"openai/m?base_url={server.base_url}&image_api=chat", lambda b: b.generate(["x"], seed=1))
    assert caught.value.raw == "I can't draw that."


# -- bounded and safe replies -----------------------------------------------------------------------


def chat_reply(url: str) -> dict[str, Any]:
    return {"id": "c", "object": "chat.completion", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": [{"type": "image_url", "image_url": {"url": url}}]},
         "finish_reason": "stop"}]}


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("data:text/html;base64," + base64.b64encode(b"<script>").decode(), "text/html, not an image"),
        ("data:;base64," + png_b64(picture((1, 1, 1))), "no media type, not an image"),
        ("file:///etc/passwd", "scheme 'file'"),
    ],
)
def test_a_chat_image_that_is_not_an_image_url_is_refused_without_following_it(url: str, says: str) -> None:
    with HostileServer(lambda handler: send_json(handler, 200, json.dumps(chat_reply(url)))) as server:
        with pytest.raises(BackendError) as caught:
            settled(f"openai/m?base_url={server.base_url}&image_api=chat", lambda b: b.generate(["x"], seed=1))
        assert server.requests == 1
    assert says in str(caught.value) and "choices[0].message.content[0].image_url" in str(caught.value)
    assert not caught.value.retryable


def test_a_chat_image_is_held_to_the_pixel_cap() -> None:
    url = "data:image/png;base64," + png_b64(picture((5, 5, 5), (300, 300)))
    with HostileServer(lambda handler: send_json(handler, 200, json.dumps(chat_reply(url)))) as server:
        with pytest.raises(BackendError, match="300x300.*max_pixels"):
            settled(f"openai/m?base_url={server.base_url}&image_api=chat&max_pixels=10000", lambda b: b.generate(["x"], seed=1))


def test_a_chat_image_on_another_host_is_fetched_without_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMNI_KEY", "sk-omni-secret")
    png = base64.b64decode(png_b64(picture((9, 8, 7))))
    heard: list[str | None] = []

    def storage(handler: Any) -> None:
        heard.append(handler.headers.get("Authorization"))
        handler.send_response(200)
        handler.send_header("Content-Type", "image/png")
        handler.send_header("Content-Length", str(len(png)))
        handler.end_headers()
        handler.write_body(png)

    with HostileServer(storage) as bucket:
        link = f"http://localhost:{bucket.base_url.split(':')[2].split('/')[0]}/bucket/out.png"
        with OmniServer(images_endpoints=False, image_url=lambda data_url: link) as server:
            _, reply = settled(f"openai/{BAGEL}?base_url={server.base_url}&image_api=chat&api_key_env=OMNI_KEY",
                               lambda b: b.generate(["x"], seed=1))
            assert server.requests("/chat/completions")[0].authorization == "Bearer sk-omni-secret"
    assert reply.image.getpixel((0, 0)) == (9, 8, 7) and heard == [None]


def test_an_image_named_by_a_path_is_fetched_from_the_server_that_made_it() -> None:
    """SGLang Diffusion answers response_format=url with a path on itself (/v1/images/<id>/content)."""
    png = base64.b64decode(png_b64(picture((3, 4, 5))))
    paths: list[str] = []

    def sglang(handler: Any) -> None:
        if handler.command == "GET":
            paths.append(handler.path)
            handler.send_response(200)
            handler.send_header("Content-Type", "image/png")
            handler.send_header("Content-Length", str(len(png)))
            handler.end_headers()
            handler.write_body(png)
        else:
            send_json(handler, 200, json.dumps({"created": 0, "data": [{"url": "/v1/images/abc/content", "revised_prompt": "x"}]}))

    with HostileServer(sglang) as server:
        reply = with_openai_backend(f"openai/Qwen/Qwen-Image?base_url={server.base_url}&response_format=url",
                                    lambda b: b.generate(["x"], seed=1))
    assert paths == ["/v1/images/abc/content"] and reply.image.getpixel((0, 0)) == (3, 4, 5)


# -- the images endpoints as vLLM-Omni and SGLang extend them ----------------------------------------


def test_the_images_endpoints_get_the_per_request_fields_the_spec_sets() -> None:
    with OmniServer(chat=False) as server:
        spec = (f"openai/Qwen/Qwen-Image?base_url={server.base_url}&image_api=images&width=96&height=64&steps=20"
                "&guidance=3&negative_prompt=blurry&image_seed=true")
        _, (made, edited) = settled(spec, lambda b: both(b.generate(["a lake"], seed=77),
                                                         b.edit([picture((1, 1, 1)), picture((2, 2, 2))], "merge", seed=78)))
        generation = server.requests("/images/generations")[0]
        edit = server.requests("/images/edits")[0]
    assert generation.json == {"model": "Qwen/Qwen-Image", "prompt": "a lake", "n": 1, "size": "96x64",
                               "num_inference_steps": 20, "guidance_scale": 3.0, "negative_prompt": "blurry", "seed": 77}
    assert [name for name, _ in edit.files] == ["image[]", "image[]"] and edit.status == 200
    assert {k: v[0] for k, v in edit.form.items()} == {"model": "Qwen/Qwen-Image", "prompt": "merge", "n": "1", "size": "96x64",
                                                      "num_inference_steps": "20", "guidance_scale": "3.0",
                                                      "negative_prompt": "blurry", "seed": "78"}
    assert made.image.size == (96, 64) and edited.image.size == (96, 64)


async def both(first: Awaitable[Any], second: Awaitable[Any]) -> tuple[Any, Any]:
    return await first, await second


def test_without_the_new_settings_an_images_request_is_what_it_always_was() -> None:
    with OmniServer(chat=False) as server:
        settled(f"openai/Qwen/Qwen-Image?base_url={server.base_url}", lambda b: b.generate(["a lake"], seed=77))
        assert server.requests("/images/generations")[-1].json == {"model": "Qwen/Qwen-Image", "prompt": "a lake", "n": 1}


def test_an_edit_can_go_as_json_with_data_url_images() -> None:
    with OmniServer(chat=False, json_edits=True) as server:
        _, reply = settled(f"openai/gpt-image-1?base_url={server.base_url}&image_api=images&edit_form=json",
                           lambda b: b.edit([picture((7, 7, 7)), picture((8, 8, 8))], "merge", seed=1))
        sent = server.requests("/images/edits")[0].json
    assert sent["prompt"] == "merge" and sent["n"] == 1 and "seed" not in sent
    assert [decoded(ref["image_url"]).getpixel((0, 0)) for ref in sent["images"]] == [(7, 7, 7), (8, 8, 8)]
    assert reply.image.size == (40, 30)


def test_width_without_height_or_beside_size_is_refused_by_name() -> None:
    with pytest.raises(ConfigError, match="width and height go together"):
        OpenAIBackend(Spec.parse("openai/m?width=512"))
    with pytest.raises(ConfigError, match="not both"):
        OpenAIBackend(Spec.parse("openai/m?width=512&height=512&size=512x512"))
    with pytest.raises(ConfigError, match="image_api"):
        OpenAIBackend(Spec.parse("openai/m?image_api=both"))


# -- image_api=auto ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "chosen"),
    [({"images_endpoints": False}, "chat"), ({"chat": False}, "images"), ({}, "images")],
    ids=["chat-only", "images-only", "both"],
)
def test_auto_asks_the_server_once_and_records_its_choice_and_model(shape: dict[str, bool], chosen: str) -> None:
    with OmniServer(**shape) as server:
        record, reply = settled(f"openai/{BAGEL}?base_url={server.base_url}", lambda b: b.generate(["a cube"], seed=5))
        drawn_by = [s.path for s in server.seen if s.method == "POST" and s.status == 200]  # not the probes
    assert record["image_api"] == f"{chosen} (auto)"
    assert record["servers"][0]["models"] == [{"id": BAGEL, "root": f"/models/{BAGEL}"}]
    assert drawn_by == (["/v1/chat/completions"] if chosen == "chat" else ["/v1/images/generations"])
    assert reply.image.size == (64, 64)


def test_auto_that_could_not_ask_the_server_fails_image_nodes_by_name_and_keys_them_apart() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    backend = OpenAIBackend(Spec.parse(f"openai/{BAGEL}?base_url={dead}&timeout=2"))
    assert anyio.run(backend.settle, IMAGE_ROLES) == {}
    assert backend.identity_for(GENERATE)["image_request"] == {"api": "auto, not yet decided"}
    with pytest.raises(BackendError, match="image_api=chat or image_api=images") as caught:
        anyio.run(backend.generate, ["x"])
    assert not caught.value.retryable


def test_a_backend_that_serves_no_image_role_asks_nothing_before_the_run() -> None:
    with OmniServer() as server:
        record, _ = settled(f"openai/{BAGEL}?base_url={server.base_url}", lambda b: anyio.sleep(0), roles=frozenset({JUDGE}))
    assert record == {} and server.seen == []


# -- identity -----------------------------------------------------------------------------------------


def identity(spec: str, role: str, decided: str | None = None) -> dict[str, Any]:
    backend = OpenAIBackend(Spec.parse(spec))
    if decided is not None:
        backend.image_api = decided  # type: ignore[assignment]  # what settle would find on the server
        backend._settled = True
    return backend.identity_for(role)


def test_the_http_shape_and_the_request_fields_enter_the_identity_of_image_nodes_only() -> None:
    base = "openai/m?base_url=http://gpu:8000/v1"
    for role in (UNDERSTAND, JUDGE):  # text nodes: the same whatever the images are asked for with
        assert identity(base, role) == identity(f"{base}&image_api=chat&steps=30&image_seed=true", role) == identity(
            f"{base}&image_api=images", role)
    for role in (GENERATE, EDIT):
        chat, images = identity(f"{base}&image_api=chat", role), identity(f"{base}&image_api=images", role)
        assert chat != images and chat["image_request"] == {"api": "chat"}
        assert images == identity(base, role, decided="images") == identity(base, UNDERSTAND)  # the key images had before
        assert identity(base, role, decided="chat") == chat
        assert identity(f"{base}&image_api=chat&steps=30&negative_prompt=x", role)["image_request"] == {
            "api": "chat", "steps": 30, "negative_prompt": "x"}
        assert identity(f"{base}&edit_form=multipart", role) == identity(base, role)  # a default said aloud


# -- the hosted API without a key ---------------------------------------------------------------------


def test_the_hosted_api_without_its_key_is_refused_before_any_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    backend = OpenAIBackend(Spec.parse("openai/gpt-image-1"))
    for ask in (backend.settle, backend.preflight):
        with pytest.raises(ConfigError, match="OPENAI_API_KEY") as caught:
            anyio.run(ask, IMAGE_ROLES)
        assert caught.value.field == "api_key_env"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    assert anyio.run(backend.settle, IMAGE_ROLES) == {}  # hosted: images endpoints, nothing to ask
