"""A served UMM evaluating itself, run as a user runs it (issue 32's done-when): `umni run` against
servers on 127.0.0.1 in vLLM-Omni's shapes (tests/support/omni_server.py), one drawing only through
chat completions, one only through the images endpoints, one through both."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.omni_server import OmniServer
from tests.support.openai_server import OpenAIStubServer
from umni.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # bench/, beside tests/
from bench.stub_server import protocol_reply  # noqa: E402  (replies every protocol's parser reads)

BAGEL = "ByteDance-Seed/BAGEL-7B-MoT"
SEED = 3


def node_seeds() -> set[int]:
    """The seeds the engine gives nodes of a run with --seed SEED (one per repeat)."""
    return {(SEED * 1_000_003 + repeat * 1009) % 2**31 for repeat in range(8)}


def run(tmp_path: Path, out: str, *args: str) -> dict[str, Any]:
    code = main(["run", *args, "--seed", str(SEED), "--quiet", "--out", str(tmp_path / out), "--cache", str(tmp_path / "cache")])
    assert code == 0
    return json.loads((tmp_path / out / "summary.json").read_text())


def omni(**shape: Any) -> OmniServer:
    return OmniServer(BAGEL, responder=protocol_reply, **shape)


def image_requests(server: OmniServer) -> list[Any]:
    """What drew a picture: image requests the server answered (pre-flight probes are not)."""
    chat = [s for s in server.requests("/chat/completions") if s.json and "image" in (s.json.get("modalities") or [])]
    return chat + [s for s in server.requests("/images/generations") + server.requests("/images/edits") if s.status == 200]


@pytest.mark.parametrize("image_api", ["chat", "auto"])
def test_bagel_served_by_vllm_omni_evaluates_itself_on_umnibench_through_chat(tmp_path: Path, image_api: str) -> None:
    with omni(images_endpoints=False) as server:
        summary = run(tmp_path, "run", "umnibench", "--limit", "2",
                      "--model", f"openai/{BAGEL}?base_url={server.base_url}&image_api={image_api}")
        drawn = image_requests(server)
    counts = summary["counts"]
    assert counts["failed"] == 0 and counts["blocked"] == 0 and counts["computed"] == counts["nodes"] > 0
    images = counts["nodes"] - sum(1 for s in server.requests("/chat/completions") if s.json and not s.json.get("modalities"))
    assert len(drawn) == images and all(s.path == "/v1/chat/completions" for s in drawn)
    assert all(s.json["modalities"] == ["image"] and s.json["seed"] in node_seeds() for s in drawn)
    served = json.loads((tmp_path / "run" / "run.json").read_text())["served"]
    (record,) = served.values()
    assert record["servers"][0]["models"][0]["id"] == BAGEL
    assert record.get("image_api") == ("chat (auto)" if image_api == "auto" else None)


def test_an_images_only_server_draws_with_auto_beside_a_chat_judge(tmp_path: Path) -> None:
    with omni(chat=False) as drawer, OpenAIStubServer(responder=lambda chat: protocol_reply(chat.texts), chat_only=True) as vlm:
        understand = f"openai/Qwen/Qwen2.5-VL-72B-Instruct?base_url={vlm.base_url}"
        summary = run(tmp_path, "run", "umnibench", "--limit", "2", "--model", f"openai/Qwen/Qwen-Image?base_url={drawer.base_url}",
                      "--role", f"understand={understand}", "--role", f"judge={understand}")
        drawn = image_requests(drawer)
    assert summary["counts"]["failed"] == 0 and summary["counts"]["blocked"] == 0
    assert drawn and {s.path for s in drawn} <= {"/v1/images/generations", "/v1/images/edits"}


def test_genius_with_bagel_drawing_and_a_served_vlm_judging(tmp_path: Path) -> None:
    with omni(images_endpoints=False) as drawer, OpenAIStubServer(responder=lambda chat: protocol_reply(chat.texts), chat_only=True) as vlm:
        summary = run(tmp_path, "run", "genius", "--limit", "2", "--model", f"openai/{BAGEL}?base_url={drawer.base_url}",
                      "--role", f"judge=openai/Qwen/Qwen2.5-VL-72B-Instruct?base_url={vlm.base_url}")
        drawn = image_requests(drawer)
    assert summary["counts"]["failed"] == 0 and summary["counts"]["blocked"] == 0
    assert drawn and all(s.json["modalities"] == ["image"] for s in drawn)


def test_a_rerun_is_cached_and_switching_image_api_recomputes_the_images_only(tmp_path: Path) -> None:
    with omni() as server:  # draws the same picture whichever way it is asked
        spec = f"openai/{BAGEL}?base_url={server.base_url}&image_seed=true&image_api="
        first = run(tmp_path, "a", "umnibench", "--limit", "2", "--model", spec + "chat")
        drawn_first = len(image_requests(server))
        again = run(tmp_path, "b", "umnibench", "--limit", "2", "--model", spec + "chat")
        assert len(image_requests(server)) == drawn_first  # nothing drawn again
        switched = run(tmp_path, "c", "umnibench", "--limit", "2", "--model", spec + "images")
        drawn_again = image_requests(server)[drawn_first:]
    assert first["counts"]["computed"] == first["counts"]["nodes"]
    assert again["counts"]["cached"] == again["counts"]["nodes"] and again["counts"]["computed"] == 0
    assert switched["counts"]["computed"] == drawn_first == len(drawn_again)  # the image nodes, and only them
    assert switched["counts"]["cached"] == switched["counts"]["nodes"] - drawn_first
    assert all(s.path.startswith("/v1/images/") for s in drawn_again)


def test_the_hosted_api_without_a_key_exits_2_before_any_network_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    dialled: list[Any] = []
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: dialled.append(a) or [])
    monkeypatch.setattr(socket.socket, "connect", lambda self, address: dialled.append(address))
    monkeypatch.setattr(socket.socket, "connect_ex", lambda self, address: dialled.append(address) or 1)
    for extra in ([], ["--no-preflight"]):
        code = main(["run", "umnibench", "--limit", "1", "--model", "openai/gpt-image-1", "--out", str(tmp_path / "r"),
                     "--cache", str(tmp_path / "c"), "--quiet", *extra])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(err) == 1 and "OPENAI_API_KEY" in err[0] and err[0].startswith("umni: error:")
    assert dialled == [] and not (tmp_path / "r").exists()
