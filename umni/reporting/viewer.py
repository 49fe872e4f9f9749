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
  on first request.

Nothing is written into the run directories; the server reads them once when it starts.
"""

from __future__ import annotations

import io
import json
import re
import sys
import threading
import webbrowser
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.resources import files
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from PIL import Image

from umni.reporting.leaderboard import Run, build_tables, find_runs, label_runs, run_coverage
from umni.store.artifacts import BlobStore
from umni.store.urls import run_blobs
from umni.util.errors import InputError

THUMB_SIDE = 256
#: Thumbnails kept in memory by the server (about 20 KiB each).
MAX_THUMBS = 4000
_SHA = re.compile(r"^[0-9a-f]{64}$")
_STATIC = {"/": ("index.html", "text/html; charset=utf-8"), "/app.js": ("app.js", "text/javascript; charset=utf-8"),
           "/style.css": ("style.css", "text/css; charset=utf-8")}
#: Record fields left out of the search text and of the case's "record" block (shown elsewhere).
_BULKY = {"nodes", "transcript"}


def case_category(record: dict[str, Any]) -> str:
    """The case's domain or category, whichever field its protocol uses."""
    for key in ("domain", "category", "dimension", "task"):
        value = record.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def case_status(record: dict[str, Any], verdicts: list[bool | None]) -> str:
    """``failed`` when a node failed or was blocked, else ``wrong`` when a panel's verdict is
    negative, else ``ok``."""
    for node in record.get("nodes", {}).values():
        if node.get("status") in ("failed", "blocked"):
            return "failed"
    return "wrong" if any(v is False for v in verdicts) else "ok"


def _search_text(record: dict[str, Any], limit: int = 400) -> str:
    parts: list[str] = []

    def walk(value: Any) -> None:
        if sum(map(len, parts)) > limit:
            return
        if isinstance(value, str):
            if not _SHA.match(value):
                parts.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk({k: v for k, v in record.items() if k not in _BULKY})
    return " ".join(parts)[:limit].lower()


@dataclass
class _RunData:
    run: Run
    protocol: Any
    blobs: BlobStore | None
    records: dict[str, dict[str, Any]] = field(default_factory=dict)


class ViewerData:
    """Everything the viewer serves, read once from run directories or sweep folders."""

    def __init__(self, paths: list[Path]) -> None:
        from umni.protocols.protocol import get_protocol

        self.skipped: list[Path] = []  # run directories still being written: left out, and said so
        runs = label_runs(find_runs(paths, skipped=self.skipped))
        if not runs:
            raise InputError("no finished runs found", path=paths[0] if paths else None)
        self._runs_for_tables = runs
        self._tables: list[dict[str, Any]] | None = None
        self._tables_lock = threading.Lock()
        self.runs: list[_RunData] = []
        self.cases: list[list[Any]] = []
        self._by_case: dict[tuple[str, str], list[int]] = {}
        for index, run in enumerate(runs):
            try:
                protocol = get_protocol(run.summary["protocol"])
            except Exception:
                protocol = None
            data = _RunData(run, protocol, self._blobs(run))
            for record in run.records():
                cid = str(record.get("case_id"))
                data.records[cid] = record
                verdicts = [v.verdict for v in self._views(protocol, record)]
                self.cases.append([index, cid, case_category(record), case_status(record, verdicts), _search_text(record)])
                self._by_case.setdefault((run.summary.get("protocol", "?"), cid), []).append(index)
            self.runs.append(data)

    def tables(self) -> list[dict[str, Any]]:
        """The leaderboard tables, computed on first use: the bootstrap intervals re-score every
        run hundreds of times, which the case list should not wait for."""
        with self._tables_lock:
            if self._tables is None:
                self._tables = [t.to_json() for t in build_tables(self._runs_for_tables)]
            return self._tables

    @staticmethod
    def _blobs(run: Run) -> BlobStore | None:
        manifest = run.path / "run.json" if run.path else None
        if manifest is None or not manifest.exists():
            return None
        try:
            data = json.loads(manifest.read_text())
        except json.JSONDecodeError:
            return None
        return run_blobs(data) if isinstance(data, dict) else None  # a --blobs or --cache URL too

    @staticmethod
    def _views(protocol: Any, record: dict[str, Any]) -> list[Any]:
        if protocol is None:
            return []
        try:
            return list(protocol.views(record))
        except Exception:  # a record of an older shape: the transcript and raw record still show
            return []

    def index(self) -> dict[str, Any]:
        runs = []
        for i, data in enumerate(self.runs):
            s = data.run.summary
            coverage, failed = run_coverage(s)
            runs.append({
                "id": i, "label": data.run.label, "protocol": s.get("protocol"), "title": s.get("title", s.get("protocol")),
                "dir": str(data.run.path) if data.run.path else None, "bindings": s.get("bindings", {}),
                "overall": s.get("scores", {}).get("overall"), "cases": s.get("counts", {}).get("cases"),
                "coverage": [coverage.answered, coverage.total], "failed_nodes": failed,
                "failures": {k: v for k, v in s.get("failures", {}).items() if v},
            })
        return {"runs": runs, "cases": self.cases, "skipped": [str(p) for p in self.skipped],
                "case_fields": ["run", "case_id", "category", "status", "text"]}

    def case(self, run_id: int, case_id: str) -> dict[str, Any] | None:
        if not 0 <= run_id < len(self.runs):
            return None
        data = self.runs[run_id]
        record = data.records.get(case_id)
        if record is None:
            return None
        panels = [{"title": v.title, "image": v.image, "rows": [list(r) for r in v.rows], "verdict": v.verdict}
                  for v in self._views(data.protocol, record)]
        failures = [{"node": nid, **node["failure"]} for nid, node in sorted(record.get("nodes", {}).items()) if "failure" in node]
        blocked = [nid for nid, node in sorted(record.get("nodes", {}).items()) if node.get("status") == "blocked"]
        protocol = data.run.summary.get("protocol", "?")
        others = [{"run": i, "label": self.runs[i].run.label} for i in self._by_case.get((protocol, case_id), [])]
        return {
            "run": run_id, "label": data.run.label, "protocol": protocol, "case_id": case_id,
            "category": case_category(record), "panels": panels, "failures": failures, "blocked": blocked,
            "transcript": record.get("transcript"), "nodes": record.get("nodes", {}),
            "record": {k: v for k, v in record.items() if k not in _BULKY}, "runs": others,
        }

    def image(self, sha: str, thumb: bool) -> bytes | None:
        if not _SHA.match(sha):
            return None
        for data in self.runs:
            if data.blobs is not None and data.blobs.verify(sha):
                raw = data.blobs.path(sha).read_bytes()
                return _thumbnail(raw) if thumb else raw
        return None


def _thumbnail(raw: bytes) -> bytes:
    with Image.open(io.BytesIO(raw)) as image:
        if max(image.size) <= THUMB_SIDE:
            return raw
        image.thumbnail((THUMB_SIDE, THUMB_SIDE))
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        return buffer.getvalue()


def _handler(data: ViewerData) -> type[BaseHTTPRequestHandler]:
    thumbs: dict[str, bytes] = {}
    lock = threading.Lock()
    index_body = json.dumps(data.index(), ensure_ascii=False).encode()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet: the terminal shows the URL only
            pass

        def _send(self, body: bytes, ctype: str, cache: bool = False) -> None:
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "max-age=86400" if cache else "no-cache")
            self.end_headers()
            self.wfile.write(body)

        def _missing(self) -> None:
            self.send_error(HTTPStatus.NOT_FOUND)

        def do_GET(self) -> None:
            path = unquote(self.path.split("?", 1)[0])
            if path in _STATIC:
                name, ctype = _STATIC[path]
                return self._send(files("umni.reporting").joinpath("viewer_static", name).read_bytes(), ctype)
            if path == "/api/index.json":
                return self._send(index_body, "application/json")
            if path == "/api/tables.json":
                return self._send(json.dumps(data.tables(), ensure_ascii=False).encode(), "application/json")
            if path.startswith("/api/case/"):
                run, _, case_id = path[len("/api/case/"):].partition("/")
                found = data.case(int(run), case_id) if run.isdigit() else None
                if found is None:
                    return self._missing()
                return self._send(json.dumps(found, ensure_ascii=False).encode(), "application/json")
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


def make_server(paths: list[Path], port: int = 0) -> ThreadingHTTPServer:
    """A viewer server bound to 127.0.0.1 (port 0: any free port); call `serve_forever` to run it."""
    data = ViewerData(paths)
    server = ThreadingHTTPServer(("127.0.0.1", port), _handler(data))
    server.daemon_threads = True
    server.viewer_data = data  # type: ignore[attr-defined]
    return server


def serve(paths: list[Path], port: int = 0, open_browser: bool = False) -> None:
    server = make_server(paths, port)
    for skipped in server.viewer_data.skipped:  # type: ignore[attr-defined]
        print(f"umni view: left out {skipped}: still being written (or interrupted); run its command again to finish it", file=sys.stderr)
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    print(f"umni view: {url}  (Ctrl-C to stop)", flush=True)
    if open_browser:
        webbrowser.open(url)
    try:
        server.serve_forever()
    finally:
        server.server_close()
