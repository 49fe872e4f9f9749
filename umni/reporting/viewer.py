"""`umni view`: a local web viewer over run directories and sweep folders.

A small HTTP server on 127.0.0.1 (the standard library's, threaded) serves one static page
(``umni/reporting/viewer_static``) and JSON the page loads as it needs it:

- ``/api/index.json``: the runs and one short entry per case (run, id, category, status, a search
  text) — enough to filter and search a 1,000-case run in the browser without loading any case
  detail or image;
- ``/api/tables.json``: the paper-layout leaderboard tables (computed on first request);
- ``/api/case/<run>/<case id>``: one case: its report panels, failures with raw messages, the
  transcript (every node's prompt and reply, judge reasoning, reflection rounds), and the other
  runs that hold the same case, for side-by-side comparison;
- ``/img/<sha>.png`` and ``/thumb/<sha>.png``: images from the runs' blob stores, thumbnails made
  on first request;
- ``/status`` and ``/api/status``: where each folder given stands while it is being written (a
  sweep's work units done, running with their heartbeat age, stale or pending; a run and its shard
  directories), read again on every request, so the page refreshes itself as the work goes on.
  The reading is `umni status`'s, passed in by the CLI (`status`), as the viewer sits below it.

Nothing is written into the run directories; the server reads them once when it starts (the status
on each request).
"""

from __future__ import annotations

import errno
import gzip
import json
import re
import sys
import threading
import webbrowser
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.resources import files
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from umni.reporting.caseindex import (
    case_category,
    case_status,
)
from umni.reporting.viewer_data import ViewerData, node_facts  # noqa: F401 - importable from here
from umni.util.errors import InputError

__all__ = ["ViewerData", "case_category", "case_status", "make_server", "serve"]

#: Thumbnails kept in memory by the server (about 20 KiB each).
MAX_THUMBS = 4000
#: Host names a request may carry besides the one the user passed: this machine's loopback.
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
_RUN_INDEX = re.compile(r"^[0-9]{1,9}$")  # ASCII digits only: int() would take "²" or "١" and 5,000 digits
_STATIC = {"/": ("index.html", "text/html; charset=utf-8"), "/app.js": ("app.js", "text/javascript; charset=utf-8"),
           "/style.css": ("style.css", "text/css; charset=utf-8"), "/status": ("status.html", "text/html; charset=utf-8")}

#: What the status page shows for one folder given to the viewer: `umni status`'s JSON (see umni.run.status).
StatusReader = Callable[[Path], dict[str, Any]]


def host_name(header: str | None) -> str:
    """The host of a Host header, port and IPv6 brackets removed, lower-cased."""
    value = (header or "").strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else ""
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def status_entries(paths: list[Path], status: StatusReader | None) -> list[dict[str, Any]]:
    """/api/status: each folder's status, or the reason it has none (never an error page)."""
    entries: list[dict[str, Any]] = []
    if status is None:
        return entries
    for path in paths:
        try:
            entries.append({"path": str(path), **status(path)})
        except InputError as error:
            entries.append({"path": str(path), "error": error.describe()})
    return entries


def _handler(data: ViewerData, allowed_hosts: frozenset[str], paths: list[Path], status: StatusReader | None) -> type[BaseHTTPRequestHandler]:
    thumbs: dict[str, bytes] = {}
    lock = threading.Lock()
    index_body = json.dumps(data.index(), ensure_ascii=False).encode()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet: the terminal shows the URL only
            pass

        def _send(self, body: bytes, ctype: str, cache: bool = False) -> None:
            compress = not ctype.startswith("image/") and len(body) > 1024 and "gzip" in self.headers.get("Accept-Encoding", "")
            if compress:
                body = gzip.compress(body, compresslevel=5)
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", ctype)
            if compress:
                self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "max-age=86400" if cache else "no-cache")
            self.end_headers()
            self.wfile.write(body)

        def _json(self, value: Any) -> None:
            self._send(json.dumps(value, ensure_ascii=False).encode(), "application/json")

        def _missing(self) -> None:
            self.send_error(HTTPStatus.NOT_FOUND)

        def do_GET(self) -> None:
            if host_name(self.headers.get("Host")) not in allowed_hosts:
                return self.send_error(HTTPStatus.FORBIDDEN, "this viewer answers only requests addressed to 127.0.0.1 or localhost")
            try:
                self._route()
            except Exception as error:  # a request the routes did not foresee: an answer, never a dropped connection
                self.send_error(HTTPStatus.INTERNAL_SERVER_ERROR, f"{type(error).__name__}: {error}"[:200])

        def _route(self) -> None:
            parts = urlsplit(self.path)
            path = unquote(parts.path)
            params = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
            if path == "/api/status":
                return self._json(status_entries(paths, status))
            if path in _STATIC:
                name, ctype = _STATIC["/status" if path == "/" and not data.runs else path]  # nothing finished yet
                return self._send(files("umni.reporting").joinpath("viewer_static", name).read_bytes(), ctype)
            if path == "/api/index.json":
                return self._send(index_body, "application/json")
            if path == "/api/tables.json":
                return self._json(data.tables())
            if path == "/api/cases":
                return self._json(data.query(params))
            if path == "/api/case":
                found = data.case(params.get("run", ""), params.get("id", ""))
                return self._missing() if found is None else self._json(found)
            if path.startswith("/api/case/"):  # /api/case/<position among the runs>/<case id>
                run, _, case_id = path[len("/api/case/"):].partition("/")
                found = data.case(int(run), case_id) if _RUN_INDEX.match(run) else None
                return self._missing() if found is None else self._json(found)
            match = re.match(r"^/(img|thumb)/([0-9a-f]{64})\.png$", path)
            if match:
                kind, sha = match.groups()
                with lock:
                    body = thumbs.get(sha) if kind == "thumb" else None
                if body is None:
                    body = data.image(sha, thumb=kind == "thumb")
                    if body is not None and kind == "thumb":
                        with lock:
                            if len(thumbs) >= MAX_THUMBS:  # bounded memory; the browser caches them too
                                thumbs.clear()
                            thumbs[sha] = body
                if body is None:
                    return self._missing()
                return self._send(body, "image/png", cache=True)
            return self._missing()

    return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    viewer_data: ViewerData


def bind(host: str = "127.0.0.1", port: int = 0) -> _Server:
    """The listening socket, bound before any run is read, so a port in use is said at once."""
    try:
        return _Server((host, port), BaseHTTPRequestHandler, bind_and_activate=True)
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            raise InputError(f"port {port} on {host} is already in use: pass another --port, or --port 0 for any free one") from None
        raise


def make_server(
    paths: list[Path], port: int = 0, *, host: str = "127.0.0.1", allowed_hosts: list[str] | None = None,
    status: StatusReader | None = None,
) -> _Server:
    """A viewer server bound to `host` (port 0: any free port); call `serve_forever` to run it.
    It answers requests whose Host header is a loopback name, `host`, or one of `allowed_hosts`.
    With `status`, the status page shows `paths` as they are written, even before any run finished."""
    server = bind(host, port)
    try:
        data = ViewerData(paths, in_progress=None if status is None else lambda path: "error" not in status_entries([path], status)[0])
    except BaseException:
        server.server_close()
        raise
    names = LOOPBACK_HOSTS | {host_name(host)} | {host_name(h) for h in allowed_hosts or []}
    server.RequestHandlerClass = _handler(data, frozenset(names - {"", "0.0.0.0", "::"}), list(paths), status)
    server.viewer_data = data
    return server


def serve(paths: list[Path], port: int = 0, open_browser: bool = False, host: str = "127.0.0.1", status: StatusReader | None = None) -> None:
    server = make_server(paths, port, host=host, status=status)
    for skipped in server.viewer_data.skipped:
        print(f"umni view: left out {skipped}: still being written (or interrupted); run its command again to finish it", file=sys.stderr)
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{server.server_address[1]}/"
    print(f"umni view: {url}  (Ctrl-C to stop)", flush=True)
    threading.Thread(target=server.viewer_data.warm, name="umni-view-warm", daemon=True).start()
    if open_browser:
        webbrowser.open(url)
    try:
        server.serve_forever()
    finally:
        server.server_close()
