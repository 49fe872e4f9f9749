"""The one multiple-choice reading (issue 10.9): clear answers only, garbage is invalid, not an option."""

from __future__ import annotations

import pytest

from umni.util.choices import parse_choice
from umni_adapters.hf_parsing import parse_choice as hf_parse
from umni_adapters.openai_http import parse_option_letter

OPTIONS = ["a dog", "a cat", "a fish", "a bird"]


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("B", 1), ("(c)", 2), ("**B.**", 1), ("C.", 2), ("Answer: C", 2), ("Answer: a", 0),
        ("The answer is (C).", 2), ("a cat", 1), ("A cat.", 1),
        ("consist\ufffd D-...", None),  # garbled: a capital somewhere is not an answer
        ("A cube.", None), ("I believe D is right", None), ("B or C", None), ("E", None), ("", None),
    ],
)
def test_parse_choice_accepts_only_clear_answers(reply: str, expected: int | None) -> None:
    assert parse_choice(reply, OPTIONS) == expected


@pytest.mark.parametrize("reply", ["consist\ufffd D-...", "A cube.", "Answer: B", "(b)", "a fish", "B. a cat", "B. a dog"])
def test_every_backend_reads_a_reply_the_same_way(reply: str) -> None:
    assert parse_option_letter(reply, OPTIONS) == hf_parse(reply, OPTIONS) == parse_choice(reply, OPTIONS)


def test_likelihood_against_a_server_without_logprobs_is_a_permanent_error() -> None:
    """A server that ignores `logprobs` will never send them: retrying five times only wastes calls."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    import anyio

    from umni.util.errors import BackendError
    from umni.util.spec import Spec
    from umni_adapters.openai_http import OpenAIBackend

    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            hits.append(self.path)
            body = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": "B"}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:

        async def main() -> BackendError:
            backend = OpenAIBackend(Spec.parse(f"openai/m?base_url=http://127.0.0.1:{server.server_port}/v1&mode=likelihood"))
            await backend.start()
            try:
                with pytest.raises(BackendError) as caught:
                    await backend.choose(["Which?"], ["dog", "cat"])
                return caught.value
            finally:
                await backend.aclose()

        error = anyio.run(main)
    finally:
        server.shutdown()
        server.server_close()
    assert error.retryable is False
    assert "logprobs" in str(error)
    assert len(hits) == 1
