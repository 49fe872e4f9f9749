"""Pre-flight of OpenAI-compatible servers before a run (issue 26 item 5, issue 27): one line per dead
or misconfigured server — no answer, key refused, wrong model name, no images endpoint for a bound
image role — printed before the run starts; a healthy server gives none."""

from __future__ import annotations

import socket
from pathlib import Path

import anyio
import pytest

from tests.support.openai_server import OpenAIStubServer
from umni.backends import create_backend
from umni.cli import main
from umni.util.spec import Spec


def problems(spec: str, roles: set[str]) -> list[str]:
    backend = create_backend(Spec.parse(spec))
    return anyio.run(backend.preflight, frozenset(roles))


def refused_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}/v1"


def test_each_kind_of_problem_is_one_line_naming_the_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with (
        OpenAIStubServer(models=["Qwen/Qwen2.5-VL-7B-Instruct"], chat_only=True) as chat,
        OpenAIStubServer(api_key="k3y") as locked,
    ):
        assert problems(f"openai/Qwen/Qwen2.5-VL-7B-Instruct?base_url={chat.base_url}", {"judge"}) == []
        wrong = problems(f"openai/Qwen/Qwen2.5-VL-7b-instruct?base_url={chat.base_url}", {"judge"})
        assert wrong == [f"openai/Qwen/Qwen2.5-VL-7b-instruct at {chat.base_url}: the server does not serve "
                         "'Qwen/Qwen2.5-VL-7b-instruct' (it serves Qwen/Qwen2.5-VL-7B-Instruct); wrong model name?"]
        # image_api=auto draws through chat on a server without images endpoints: nothing to warn about
        assert problems(f"openai/Qwen/Qwen2.5-VL-7B-Instruct?base_url={chat.base_url}", {"generate", "judge"}) == []
        images = problems(f"openai/Qwen/Qwen2.5-VL-7B-Instruct?base_url={chat.base_url}&image_api=images", {"generate", "judge"})
        assert len(images) == 2 and all("HTTP 404" in line for line in images)
        assert "no /images/generations endpoint" in images[1] and "role generate calls it" in images[1]
        assert "no /images/edits endpoint" in images[0] and "GENIUS" in images[0]
        refused = problems(f"openai/m?base_url={locked.base_url}", {"judge"})
        assert refused == [f"openai/m at {locked.base_url}: HTTP 401, the server refused no key (OPENAI_API_KEY is not set)"]
        assert not [r for r in chat.requests if r.path.endswith("/chat/completions")]  # no model call
    dead = refused_url()
    assert problems(f"openai/m?base_url={dead}", {"judge"}) == [
        f"openai/m at {dead}: no answer (ConnectError); is base_url right and the server up?"
    ]


def test_umni_run_warns_before_the_run_and_can_skip_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with OpenAIStubServer(models=["judge-vlm"]) as server:
        common = ["run", "wise", "--role", "generate=sim/umm", "--limit", "1", "--quiet", "--cache", str(tmp_path / "c")]
        assert main([*common, "--role", f"judge=openai/judge-vl?base_url={server.base_url}", "--out", str(tmp_path / "a")]) == 0
        err = capsys.readouterr().err
        assert "umni: warning: pre-flight: openai/judge-vl at" in err and "wrong model name?" in err
        assert main([*common, "--role", f"judge=openai/judge-vlm?base_url={server.base_url}", "--out", str(tmp_path / "b")]) == 0
        assert "pre-flight" not in capsys.readouterr().err
        before = server.count("/models")
        assert main([*common, "--role", f"judge=openai/judge-vl?base_url={server.base_url}", "--out", str(tmp_path / "c2"),
                     "--no-preflight"]) == 0
        assert server.count("/models") == before


def test_a_sweep_probes_each_shared_backend_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with OpenAIStubServer(models=["judge-vlm"]) as server:
        sweep = tmp_path / "sweep.yaml"
        sweep.write_text(
            f"out: {tmp_path / 's'}\ncache: {tmp_path / 'c'}\nprotocols: [wise]\nmodels: [sim/umm]\nseeds: [0, 1]\nlimit: 1\n"
            f'roles: [{{judge: "openai/judge-vl?base_url={server.base_url}"}}]\n'
        )
        assert main(["sweep", str(sweep)]) == 0
        assert server.count("/models") == 1  # two runs, one backend
    assert capsys.readouterr().err.count("pre-flight: openai/judge-vl at") == 1
