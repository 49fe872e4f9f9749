"""A real OpenAI-compatible HTTP server on 127.0.0.1 that answers deterministically and fails on cue.

Backends under test talk to it over real sockets, so timeouts, resets and malformed bodies are the
genuine article rather than a patched client. Typical use::

    with OpenAIStubServer(faults=[Fault.rate_limit(retry_after="2"), None, Fault.reset()]) as server:
        spec = f"openai/stub?base_url={server.base_url}"
        ...
        assert server.count("/chat/completions") == 3

Endpoints (under ``/v1``):

* ``POST /chat/completions`` — the reply comes from ``responder`` (default: when the last user text
  lists options as ``A. ...`` lines and one contains ``answer_word``, answers ``Answer: <letter>``;
  otherwise echoes ``images=<n> text=<all text parts joined by ' | '>``). Includes ``usage``
  (prompt_tokens = words in the text + 10 per image, completion_tokens = words in the reply) unless
  ``include_usage=False``, and ``logprobs`` for the first token when asked.
* ``POST /images/generations`` — a PNG drawn from sha256(prompt) (see `draw_from_prompt`), as
  ``b64_json``, or as a ``url`` under ``/files/`` when the request asks ``response_format=url``
  (with ``data_urls=True``: a ``data:image/png;base64,…`` URL, as some servers hand it out).
* ``POST /images/edits`` — multipart; returns the first ``image``/``image[]`` file inverted.
* ``GET /files/<name>`` — images handed out by URL.

Faults: ``faults`` is a schedule consumed one entry per request, in arrival order; ``None`` serves
the request normally. A `Fault` with ``path`` set waits for the first request whose path ends with
it (requests to other paths pass it by). More can be queued at any time with `add_faults`.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import socket
import struct
import threading
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from PIL import Image, ImageDraw, ImageOps

__all__ = ["Fault", "OpenAIStubServer", "RecordedRequest", "ChatRequest", "draw_from_prompt", "answer_letter"]

FAULT_KINDS = ("status", "reset", "stall", "malformed_json", "bad_image")


@dataclass(frozen=True)
class Fault:
    """One misbehaviour, for one request. Build with the class methods; they read like the schedule."""

    kind: str
    status: int = 0
    message: str = ""
    retry_after: str | None = None
    seconds: float = 0.0
    path: str | None = None
    #: ``error.code`` of the body (default: the status); OpenAI names refusals here (``moderation_blocked``).
    code: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind '{self.kind}'; known: {', '.join(FAULT_KINDS)}")

    @classmethod
    def http(
        cls, status: int, message: str = "", *, retry_after: str | None = None, path: str | None = None, code: str | None = None
    ) -> Fault:
        """An error status with an OpenAI-style ``{"error": {"message": ..., "code": ...}}`` body."""
        return cls(
            "status", status=status, message=message or f"stub error {status}", retry_after=retry_after, path=path, code=code
        )

    @classmethod
    def rate_limit(cls, retry_after: str | None = None, *, path: str | None = None) -> Fault:
        """429; ``retry_after`` is sent verbatim (seconds such as "2", or an HTTP date)."""
        return cls.http(429, "Rate limit reached, slow down", retry_after=retry_after, path=path)

    @classmethod
    def server_error(cls, status: int = 500, *, path: str | None = None) -> Fault:
        return cls.http(status, "The server had an error while processing your request", path=path)

    @classmethod
    def unavailable(cls, retry_after: str | None = None, *, path: str | None = None) -> Fault:
        return cls.http(503, "The engine is currently overloaded", retry_after=retry_after, path=path)

    @classmethod
    def bad_request(cls, message: str = "Invalid value for 'model'", *, path: str | None = None) -> Fault:
        return cls.http(400, message, path=path)

    @classmethod
    def reset(cls, *, path: str | None = None) -> Fault:
        """Read the request, then drop the connection without a response (TCP RST)."""
        return cls("reset", path=path)

    @classmethod
    def stall(cls, seconds: float = 5.0, *, path: str | None = None) -> Fault:
        """Wait ``seconds`` (longer than the client's timeout), then answer normally if still connected."""
        return cls("stall", seconds=seconds, path=path)

    @classmethod
    def malformed_json(cls, *, path: str | None = None) -> Fault:
        """200 with a JSON content type and a body cut off mid-object."""
        return cls("malformed_json", path=path)

    @classmethod
    def bad_image(cls, *, path: str | None = None) -> Fault:
        """For image endpoints: valid JSON whose ``b64_json`` is a truncated PNG. Elsewhere: served normally."""
        return cls("bad_image", path=path)


@dataclass
class RecordedRequest:
    """What the server saw of one request; the Authorization header is kept apart from ``headers``."""

    method: str
    path: str
    headers: dict[str, str]
    authorization: str | None
    body_size: int
    json: Any = None
    form: dict[str, str] = field(default_factory=dict)
    files: list[tuple[str, str, int]] = field(default_factory=list)  # (field, filename, size)
    fault: Fault | None = None
    status: int | None = None  # None when the connection was dropped


@dataclass
class ChatRequest:
    """A chat completion request as a responder sees it."""

    body: dict[str, Any]
    texts: list[str]
    image_urls: list[str]
    #: Order of parts in the last user message: "text" or "image".
    part_kinds: list[str]


def answer_letter(text: str, word: str) -> str | None:
    """The letter of the single ``A. ...`` option line that contains ``word`` (case-insensitive)."""
    hits = [m.group(1) for m in re.finditer(r"(?m)^\s*([A-Z])[.)]\s+(.*)$", text) if word.lower() in m.group(2).lower()]
    return hits[0] if len(hits) == 1 else None


def draw_from_prompt(prompt: str, size: tuple[int, int] = (64, 64)) -> Image.Image:
    """A picture that depends only on the prompt: background and a rectangle coloured from its hash."""
    digest = hashlib.sha256(prompt.encode()).digest()
    width, height = size
    image = Image.new("RGB", size, tuple(digest[0:3]))
    x0, y0 = digest[3] % max(width // 2, 1), digest[4] % max(height // 2, 1)
    ImageDraw.Draw(image).rectangle([x0, y0, x0 + width // 3, y0 + height // 3], fill=tuple(digest[5:8]))
    return image


class OpenAIStubServer:
    """Start with ``with OpenAIStubServer(...) as server`` (or `start`/`stop`); ``server.base_url`` ends in /v1."""

    def __init__(
        self,
        faults: Iterable[Fault | None] = (),
        *,
        latency: float = 0.0,
        answer_word: str | None = None,
        responder: Callable[[ChatRequest], str] | None = None,
        include_usage: bool = True,
        api_key: str | None = None,
        patch_completion: Callable[[dict[str, Any]], None] | None = None,
        data_urls: bool = False,
        port: int = 0,
        models: list[str] | None = None,
        chat_only: bool = False,
    ) -> None:
        """
        latency: seconds added to every request before it is served (benchmarks).
        answer_word: the default responder answers with the option containing this word.
        responder: replaces the default chat reply rule.
        include_usage: False imitates servers that send no ``usage`` object.
        api_key: when set, requests without ``Authorization: Bearer <api_key>`` get 401.
        patch_completion: changes each chat completion in place before it is sent (a refusal, a
            ``finish_reason`` of ``content_filter``, usage removed …).
        data_urls: an image asked for by URL is answered with a ``data:`` URL holding the PNG.
        port: the port on 127.0.0.1 to listen on (0: a free one, see `port` once started).
        models: when given, ``GET /v1/models`` lists these ids (otherwise it is a 404, as before).
        chat_only: the images endpoints answer 404, as a plain vLLM chat server does.
        """
        self.models = models
        self.chat_only = chat_only
        self.latency = latency
        self.answer_word = answer_word
        self.responder = responder or self._default_reply
        self.include_usage = include_usage
        self.api_key = api_key
        self.patch_completion = patch_completion
        self.data_urls = data_urls
        self.requested_port = port
        self.requests: list[RecordedRequest] = []
        self._faults: list[Fault | None] = list(faults)
        self._files: dict[str, bytes] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._in_flight = 0
        self.peak_concurrency = 0
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> OpenAIStubServer:
        self._stopping.clear()
        handler = type("BoundHandler", (_Handler,), {"stub": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", self.requested_port), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="openai-stub", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # releases stalled handlers
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = self._thread = None

    def __enter__(self) -> OpenAIStubServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- schedule and records ----------------------------------------------------------------------

    def add_faults(self, *faults: Fault | None) -> None:
        with self._lock:
            self._faults.extend(faults)

    @property
    def faults_remaining(self) -> int:
        with self._lock:
            return len(self._faults)

    def count(self, path_suffix: str = "") -> int:
        """Requests whose path ends with ``path_suffix`` (all requests when empty)."""
        with self._lock:
            return sum(r.path.endswith(path_suffix) for r in self.requests)

    def last(self, path_suffix: str = "") -> RecordedRequest:
        with self._lock:
            return [r for r in self.requests if r.path.endswith(path_suffix)][-1]

    def _take_fault(self, path: str) -> Fault | None:
        with self._lock:
            for i, fault in enumerate(self._faults):
                if fault is None or fault.path is None or path.endswith(fault.path):
                    return self._faults.pop(i)
        return None

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self.peak_concurrency = max(self.peak_concurrency, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1

    # -- content -----------------------------------------------------------------------------------

    def _default_reply(self, chat: ChatRequest) -> str:
        if self.answer_word:
            letter = answer_letter("\n".join(chat.texts), self.answer_word)
            if letter:
                return f"Answer: {letter}"
        return f"images={len(chat.image_urls)} text=" + " | ".join(chat.texts)

    def chat_completion(self, body: dict[str, Any]) -> dict[str, Any]:
        chat = _read_chat(body)
        reply = self.responder(chat)
        prompt_tokens = sum(len(t.split()) for t in chat.texts) + 10 * len(chat.image_urls)
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": reply},
            "finish_reason": "stop",
        }
        if body.get("logprobs"):
            choice["logprobs"] = {"content": [_first_token_logprobs(reply, int(body.get("top_logprobs") or 0))]}
        response: dict[str, Any] = {
            "id": "chatcmpl-stub",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", ""),
            "choices": [choice],
        }
        if self.include_usage:
            completion = len(reply.split())
            response["usage"] = {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion,
                "total_tokens": prompt_tokens + completion,
            }
        if self.patch_completion is not None:
            self.patch_completion(response)
        return response

    def image_response(self, image: Image.Image, *, as_url: bool, corrupt: bool) -> dict[str, Any]:
        png = _png(image)
        if corrupt:
            png = png[: max(len(png) // 2, 40)]
        if as_url and self.data_urls:
            item = {"url": "data:image/png;base64," + base64.b64encode(png).decode("ascii")}
        elif as_url:
            name = hashlib.sha256(png).hexdigest()[:16] + ".png"
            with self._lock:
                self._files[name] = png
            item = {"url": f"http://127.0.0.1:{self.port}/v1/files/{name}"}
        else:
            item = {"b64_json": base64.b64encode(png).decode("ascii")}
        return {"created": 0, "data": [item]}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes; without TCP_NODELAY the body waits for the client's
    # delayed ACK (~40 ms) on every keep-alive request. Real servers (vLLM, SGLang) set it too.
    disable_nagle_algorithm = True
    stub: OpenAIStubServer  # set on the bound subclass

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def _serve(self, method: str) -> None:
        stub = self.stub
        stub._enter()
        try:
            self._serve_inner(method)
        finally:
            stub._leave()

    def _serve_inner(self, method: str) -> None:
        stub = self.stub
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path = self.path.split("?", 1)[0]
        headers = {k.lower(): v for k, v in self.headers.items() if k.lower() != "authorization"}
        record = RecordedRequest(method, path, headers, self.headers.get("Authorization"), len(raw))
        content_type = self.headers.get("Content-Type", "")
        if content_type.startswith("application/json") and raw:
            try:
                record.json = json.loads(raw)
            except json.JSONDecodeError:
                record.json = None
        elif content_type.startswith("multipart/form-data"):
            record.form, uploads = _parse_multipart(content_type, raw)
            record.files = [(name, filename, len(data)) for name, filename, data in uploads]
        else:
            uploads = []
        stub._record(record)
        fault = stub._take_fault(path)
        record.fault = fault
        if stub.latency:
            stub._stopping.wait(stub.latency)

        if fault is not None and fault.kind == "reset":
            self._reset()
            return
        if fault is not None and fault.kind == "stall":
            stub._stopping.wait(fault.seconds)
            fault = None  # then answer normally, if anyone is still listening
        if fault is not None and fault.kind == "status":
            self._send_error(record, fault)
            return
        if stub.api_key and record.authorization != f"Bearer {stub.api_key}":
            self._send_json(
                record, 401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}
            )
            return
        if fault is not None and fault.kind == "malformed_json":
            self._send_bytes(record, 200, b'{"id": "x", "choices": [{"message": {"content": "B', "application/json")
            return

        corrupt = fault is not None and fault.kind == "bad_image"
        try:
            if method == "GET" and path == "/v1/models" and stub.models is not None:
                self._send_json(record, 200, {"object": "list", "data": [{"id": m, "object": "model"} for m in stub.models]})
            elif stub.chat_only and path.startswith("/v1/images/"):
                self._send_json(record, 404, {"detail": "Not Found"})
            elif method == "GET" and path.startswith("/v1/files/"):
                data = stub._files.get(path.rsplit("/", 1)[-1])
                if data is None:
                    self._send_json(record, 404, {"error": {"message": f"no file {path}"}})
                else:
                    self._send_bytes(record, 200, data, "image/png")
            elif method == "POST" and path == "/v1/chat/completions" and isinstance(record.json, dict):
                self._send_json(record, 200, stub.chat_completion(record.json))
            elif method == "POST" and path == "/v1/images/generations" and isinstance(record.json, dict):
                body = record.json
                image = draw_from_prompt(str(body.get("prompt", "")), _size(body.get("size")))
                as_url = body.get("response_format") == "url"
                self._send_json(record, 200, stub.image_response(image, as_url=as_url, corrupt=corrupt))
            elif method == "POST" and path == "/v1/images/edits" and uploads:
                source = Image.open(io.BytesIO(uploads[0][2])).convert("RGB")
                edited = ImageOps.invert(source)
                if record.form.get("size"):
                    edited = edited.resize(_size(record.form["size"]))
                as_url = record.form.get("response_format") == "url"
                self._send_json(record, 200, stub.image_response(edited, as_url=as_url, corrupt=corrupt))
            else:
                self._send_json(
                    record,
                    404 if method == "GET" else 400,
                    {"error": {"message": f"stub cannot serve {method} {path}"}},
                )
        except (OSError, ValueError) as exc:
            self._send_json(record, 400, {"error": {"message": f"stub could not read the request: {exc}"}})

    # -- responses ---------------------------------------------------------------------------------

    def _send_error(self, record: RecordedRequest, fault: Fault) -> None:
        extra = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
        body = {"error": {"message": fault.message, "type": "stub_error", "code": fault.code or fault.status}}
        self._send_json(record, fault.status, body, extra)

    def _send_json(self, record: RecordedRequest, status: int, body: Any, extra: dict[str, str] | None = None) -> None:
        self._send_bytes(record, status, json.dumps(body).encode(), "application/json", extra)

    def _send_bytes(
        self, record: RecordedRequest, status: int, data: bytes, content_type: str, extra: dict[str, str] | None = None
    ) -> None:
        record.status = status
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for key, value in (extra or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (timeout); nothing to answer

    def _reset(self) -> None:
        """Abort the connection: SO_LINGER 0 makes close() send RST instead of a polite FIN."""
        self.close_connection = True
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
        except OSError:
            pass


# -- request parsing helpers -----------------------------------------------------------------------


def _read_chat(body: dict[str, Any]) -> ChatRequest:
    texts: list[str] = []
    urls: list[str] = []
    kinds: list[str] = []
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            texts.append(content)
            kinds.append("text")
            continue
        for part in content or []:
            if part.get("type") == "text":
                texts.append(str(part.get("text", "")))
                kinds.append("text")
            elif part.get("type") == "image_url":
                url = part.get("image_url")
                urls.append(url.get("url", "") if isinstance(url, dict) else str(url))
                kinds.append("image")
    return ChatRequest(body=body, texts=texts, image_urls=urls, part_kinds=kinds)


def _first_token_logprobs(reply: str, top: int) -> dict[str, Any]:
    """The reply's answer letter is the likeliest token; other letters follow at falling odds."""
    letter = answer_letter_in_reply(reply)
    token = letter or (reply.split() or [""])[0]
    alternatives = [{"token": token, "logprob": -0.05}]
    for i, other in enumerate(c for c in "ABCDEFGH" if c != token):
        alternatives.append({"token": other, "logprob": -3.0 - i})
    return {"token": token, "logprob": -0.05, "top_logprobs": alternatives[: max(top, 1)]}


def answer_letter_in_reply(reply: str) -> str | None:
    match = re.search(r"Answer:\s*([A-Z])\b", reply)
    return match.group(1) if match else None


def _parse_multipart(content_type: str, raw: bytes) -> tuple[dict[str, str], list[tuple[str, str, bytes]]]:
    """Fields and files of a multipart/form-data body, via the stdlib MIME parser."""
    message = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw)
    form: dict[str, str] = {}
    files: list[tuple[str, str, bytes]] = []
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        filename = part.get_filename()
        payload = part.get_payload(decode=True) or b""
        if filename is not None:
            files.append((str(name), filename, payload))
        elif name is not None:
            form[str(name)] = payload.decode("utf-8", "replace")
    return form, files


def _size(value: Any) -> tuple[int, int]:
    match = re.fullmatch(r"(\d+)x(\d+)", str(value or ""))
    if not match:
        return (64, 64)
    return (min(int(match.group(1)), 1024), min(int(match.group(2)), 1024))


def _png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def wait_until(predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
    """Poll ``predicate`` until true or ``timeout`` passes (for asserting on server-side effects)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


def with_openai_backend(spec: str, action: Callable[[Any], Awaitable[Any]]) -> Any:
    """Start the OpenAI-compatible backend of ``spec``, run one async action with it, close it."""
    import anyio

    from umni.util.spec import Spec
    from umni_adapters.openai_http import OpenAIBackend

    async def main() -> Any:
        backend = OpenAIBackend(Spec.parse(spec))
        await backend.start()
        try:
            return await action(backend)
        finally:
            await backend.aclose()

    return anyio.run(main)
