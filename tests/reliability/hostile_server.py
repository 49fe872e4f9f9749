"""A real HTTP server on 127.0.0.1 that misbehaves on purpose: huge bodies, trickled bytes, image
bombs, raw error text, impossible usage counts. Every hostile loop is bounded and stops by itself
(or as soon as the client hangs up), so a test can never hang on it.

    with HostileServer(HUGE_CHUNKED) as server:
        spec = f"openai/m?base_url={server.base_url}&max_response_bytes=1000000"
        ...
        assert server.bytes_sent < 64 * 1024 * 1024
"""

from __future__ import annotations

import base64
import json
import struct
import threading
import time
import zlib
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: A behaviour writes the whole response for one request through the handler.
Behaviour = Callable[["_Handler"], None]

GIB = 1024**3
CHUNK = 64 * 1024


def bomb_png(width: int, height: int) -> bytes:
    """A small, valid PNG header declaring width x height 8-bit grey pixels (data truncated)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    compressor = zlib.compressobj(9)
    data = b"".join(compressor.compress(b"\x00" * (width + 1)) for _ in range(8)) + compressor.flush()
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data) + chunk(b"IEND", b"")


class HostileServer:
    """Serves every POST and GET with `behaviour`; counts the body bytes it managed to send."""

    def __init__(self, behaviour: Behaviour) -> None:
        self.behaviour = behaviour
        self.bytes_sent = 0
        self.requests = 0
        self.finished = threading.Event()  # set when a behaviour ends (completed or cut off)
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.hostile = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def count(self, n: int) -> None:
        with self._lock:
            self.bytes_sent += n

    def __enter__(self) -> HostileServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self._serve()

    def _serve(self) -> None:
        server: HostileServer = self.server.hostile  # type: ignore[attr-defined]
        server.requests += 1
        try:
            server.behaviour(self)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client hung up: exactly what a bounded client should do
        finally:
            server.finished.set()
            self.close_connection = True

    def end_headers(self) -> None:
        # every connection is closed after its one response (`_serve`): an HTTP/1.1 server says so, or
        # a client that keeps connections alive sends its next request down the closed one
        self.send_header("Connection", "close")
        super().end_headers()

    def write_body(self, data: bytes) -> None:
        self.wfile.write(data)
        self.wfile.flush()
        self.server.hostile.count(len(data))  # type: ignore[attr-defined]


# ----------------------------------------------------------------------------------- behaviours


def send_json(handler: _Handler, status: int, text: str) -> None:
    body = text.encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.write_body(body)


def plain_error(status: int, text: str) -> Behaviour:
    """An error status with a plain-text (not JSON) body."""

    def behave(handler: _Handler) -> None:
        body = text.encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "text/plain")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.write_body(body)

    return behave


def image_reply(png: bytes) -> Behaviour:
    """An Images API reply carrying `png` as b64_json."""
    text = json.dumps({"created": 0, "data": [{"b64_json": base64.b64encode(png).decode()}]})
    return lambda handler: send_json(handler, 200, text)


def image_url_reply(url: str) -> Behaviour:
    """An Images API reply naming its image by `url` (a ``data:`` URL, say); any GET is answered 404."""
    text = json.dumps({"created": 0, "data": [{"url": url}]})

    def behave(handler: _Handler) -> None:
        if handler.command == "GET":
            send_json(handler, 404, json.dumps({"error": {"message": f"no such file {handler.path[:80]}"}}))
        else:
            send_json(handler, 200, text)

    return behave


def huge_chunked(total: int = GIB) -> Behaviour:
    """A chunked JSON-looking body of `total` bytes, written until done or the client hangs up."""

    def behave(handler: _Handler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        piece = b" " * CHUNK
        frame = f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
        sent = 0
        while sent < total:
            handler.wfile.write(frame)
            handler.server.hostile.count(len(piece))  # type: ignore[attr-defined]
            sent += len(piece)
        handler.wfile.write(b"0\r\n\r\n")

    return behave


def trickle(total: int = 600, every: float = 0.05) -> Behaviour:
    """A body of `total` bytes sent one byte every `every` seconds (30 s at most by default),
    each byte inside any per-read timeout, so only a deadline on the whole attempt stops it."""

    def behave(handler: _Handler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(total))
        handler.end_headers()
        for _ in range(total):
            handler.write_body(b" ")
            time.sleep(every)

    return behave


def chat_with_usage(usage_json: str, text: str = "Answer: A") -> Behaviour:
    """A chat completion whose usage object is given as raw JSON text (Infinity, -5, 1e999...)."""
    body = (
        '{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":'
        + json.dumps(text)
        + '},"finish_reason":"stop"}],"usage":'
        + usage_json
        + "}"
    )
    return lambda handler: send_json(handler, 200, body)
