"""Secrets never reach a file umni writes: keys echoed by a server (in an error or in a reply),
credentials in a base_url (refused), and keys pasted into a spec. Real server on 127.0.0.1."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hostile_server import HostileServer, plain_error
from reliability_support import files_containing, letter_by_hash

from tests.support.openai_server import ChatRequest, OpenAIStubServer, with_openai_backend
from umni.cli import main as cli_main
from umni.run.evaluation import RunRequest, evaluate
from umni.util.errors import ConfigError
from umni.util.secrets import register_secret, scrub

KEY = "sk-umni-fault-" + "9e4b2d" * 8


def _run(tmp_path: Path, model: str, *, limit: int = 2, roles: list[str] | None = None) -> dict[str, Any]:
    request = RunRequest(protocol="umnibench", out=tmp_path / "run", cache=tmp_path / "cache", limit=limit, model=model,
                         roles=roles or [], progress=False)  # fmt: skip
    return evaluate(request).summary


def _written(tmp_path: Path) -> list[Path]:
    return [tmp_path / "run", tmp_path / "cache"]


def test_a_key_echoed_at_the_cut_of_an_error_message_is_masked_whole(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    # a plain-text error body (not JSON) is cut to 300 characters; the key straddles the cut
    body = "x" * (300 - len(KEY) + 1) + KEY + " was rejected"
    with HostileServer(plain_error(401, body)) as server:
        summary = _run(tmp_path, f"openai/stub-umm?base_url={server.base_url}&timeout=5&roles=understand",
                       roles=["generate=sim/umm", "edit=sim/umm"], limit=1)  # fmt: skip
    assert summary.failures["backend"] > 0
    assert files_containing(_written(tmp_path), KEY[:-1].encode()) == []
    assert files_containing(_written(tmp_path), KEY[-20:-1].encode()) == []


def test_a_key_echoed_in_a_successful_reply_is_not_stored(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)

    def leaky(chat: ChatRequest) -> str:
        return letter_by_hash(chat) + f" (my key is {KEY})"

    with OpenAIStubServer(responder=leaky, api_key=KEY) as server:
        summary = _run(tmp_path, f"openai/stub-umm?base_url={server.base_url}&timeout=5")
    assert summary.counts.computed > 0
    assert "my key is ***" in (tmp_path / "run" / "results.jsonl").read_text()  # the reply kept, the key masked
    assert files_containing(_written(tmp_path), KEY.encode()) == []


def test_the_configured_key_is_sent_as_a_bearer_token_on_every_request(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with OpenAIStubServer(responder=letter_by_hash, api_key=KEY) as server:
        summary = _run(tmp_path, f"openai/stub-umm?base_url={server.base_url}&timeout=5")
        sent = {r.authorization for r in server.requests}
    assert summary.counts.computed > 0 and summary.counts.failed == 0
    assert sent == {f"Bearer {KEY}"}


PASSWORD = "Pa55-word-" + "c0ffee" * 4


def _with_userinfo(url: str) -> str:
    return url.replace("http://", f"http://umni-user:{PASSWORD}@")


@pytest.mark.parametrize("fleet", [False, True])
def test_base_url_credentials_are_refused_naming_the_field_and_never_echoed(monkeypatch, fleet):
    """Issue 25 item 10: ``user:password@`` in base_url replaced the API key (the HTTP client sent
    Basic auth built from it, so the Bearer key never went out). A credential in a URL is refused
    before anything is sent, and the refusal repeats neither the user nor the password."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with OpenAIStubServer(responder=letter_by_hash, api_key=KEY) as server:
        url = _with_userinfo(server.base_url)
        base_url = f"{server.base_url},{url}" if fleet else url
        with pytest.raises(ConfigError) as caught:
            with_openai_backend(f"openai/stub-umm?base_url={base_url}&timeout=5", lambda b: b.respond(["hi"]))
        assert server.requests == []  # nothing sent, with Basic auth or otherwise
    error = caught.value
    assert error.field == "base_url" and "base_url" in error.describe() and "api_key_env" in error.describe()
    for text in (error.describe(), str(error), repr(error.args)):
        assert PASSWORD not in text and "umni-user" not in text


def test_a_run_with_base_url_credentials_stops_before_any_work(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with OpenAIStubServer(responder=letter_by_hash, api_key=KEY) as server:
        url = _with_userinfo(server.base_url)
        code = cli_main(["run", "umnibench", "--model", f"openai/stub-umm?base_url={url}", "--out", str(tmp_path / "run"),
                         "--cache", str(tmp_path / "cache"), "--quiet"])  # fmt: skip
        assert server.requests == []
    err = capsys.readouterr().err
    assert code == 2 and "base_url" in err and "Traceback" not in err
    assert PASSWORD not in err and "umni-user" not in err
    assert not (tmp_path / "run").exists() or files_containing([tmp_path / "run"], PASSWORD.encode()) == []
    assert not (tmp_path / "cache").exists() or files_containing([tmp_path / "cache"], PASSWORD.encode()) == []


def test_an_api_key_in_a_spec_is_refused_without_echoing_it(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "umni", "run", "umnibench", "--model", f"openai/gpt-4o?api_key={KEY}",
         "--out", str(tmp_path / "run"), "--cache", str(tmp_path / "cache"), "--quiet"],  # fmt: skip
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert KEY not in done.stdout + done.stderr and KEY[:12] in "sk-umni-fault-"  # not even a part of it
    assert "api_key_env" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "run").exists()


def test_a_spec_error_does_not_echo_base_url_credentials(tmp_path):
    url = "http://umni-user:Hunter2-" + "ab" * 8 + "@127.0.0.1:9/v1"
    done = subprocess.run(
        [sys.executable, "-m", "umni", "run", "umnibench", "--model", f"openai/m?base_url={url}&bogus=1",
         "--out", str(tmp_path / "run"), "--quiet"],  # fmt: skip
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2 and "base_url carries user information" in done.stderr  # refused before the rest
    assert "Hunter2" not in done.stderr and "umni-user" not in done.stderr


def test_credential_named_environment_variables_are_masked(tmp_path):
    token = "hf_" + "Zq9" * 10
    probe = "from umni.util.secrets import scrub; print(scrub('401 for token " + token + "'))"
    env = {**os.environ, "HF_TOKEN": token}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, env=env)
    assert done.stdout.strip() == "401 for token ***", done.stderr


def test_scrub_masks_registered_secrets_userinfo_and_object_reprs():
    register_secret("tok-" + "5" * 12)
    text = "GET http://bob:pw%40x@h:1/v1 and http://al:pw%40h/v1 tok-555555555555 <_io.BytesIO object at 0x7f00aa>"
    assert scrub(text) == "GET http://h:1/v1 and http://h/v1 *** <_io.BytesIO>"
