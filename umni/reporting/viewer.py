"""`umni view`: a local web viewer over run directories and sweep folders.

A Starlette application on uvicorn, bound to 127.0.0.1 unless told otherwise, serves one static page
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

Only requests addressed to this machine's loopback names (or the host the user named) are answered,
so a web page whose domain an attacker points at 127.0.0.1 (DNS rebinding) cannot read the runs.
The routes are in `umni.reporting.viewer_app`; this module binds the socket, reads the runs and
runs the server. Nothing is written into the run directories; the server reads them once when it
starts (the status on each request).
"""

from __future__ import annotations

import errno
import signal
import socket
import sys
import threading
import webbrowser
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from umni.reporting.caseindex import (
    case_category,
    case_status,
)
from umni.reporting.viewer_data import ViewerData, node_facts  # noqa: F401 - importable from here
from umni.util.errors import InputError

if TYPE_CHECKING:
    import uvicorn

__all__ = ["ViewerData", "ViewerServer", "case_category", "case_status", "make_server", "serve"]

#: Host names a request may carry besides the one the user passed: this machine's loopback.
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
#: Seconds a stopping server waits for requests in flight before it cancels them.
GRACEFUL_STOP_SECONDS = 3

#: What the status page shows for one folder given to the viewer: `umni status`'s JSON (see umni.run.status).
StatusReader = Callable[[Path], dict[str, Any]]


def host_name(header: str | None) -> str:
    """The host of a Host header, port and IPv6 brackets removed, lower-cased."""
    value = (header or "").strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else ""
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def trusted_hosts(host: str, allowed_hosts: list[str] | None = None) -> list[str]:
    """The Host names answered, as TrustedHostMiddleware compares them (IPv6 literals in brackets):
    loopback, `host` and `allowed_hosts`, never a wildcard address (it names no host)."""
    names = LOOPBACK_HOSTS | {host_name(host)} | {host_name(h) for h in allowed_hosts or []}
    return sorted(f"[{name}]" if ":" in name else name for name in names - {"", "0.0.0.0", "::"})


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


def bind(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    """The listening socket, bound before any run is read, so a port in use is said at once.
    Connections wait in its backlog until the server starts serving."""
    try:
        return socket.create_server((host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET)
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            raise InputError(f"port {port} on {host} is already in use: pass another --port, or --port 0 for any free one") from None
        raise


class ViewerServer:
    """A viewer bound to its socket, with the runs read. `serve_forever` runs uvicorn on the socket
    until `stop` or `shutdown` stops it; uvicorn and Starlette are imported then, not when the
    server is made."""

    def __init__(self, sock: socket.socket, data: ViewerData, hosts: list[str], paths: list[Path], status: StatusReader | None) -> None:
        self.socket = sock
        self.viewer_data = data
        self.hosts = hosts
        self.paths = paths
        self.status = status
        self._server: uvicorn.Server | None = None
        self._stopping = False
        self._stopped = threading.Event()

    @property
    def server_address(self) -> tuple[str, int]:
        host, port = self.socket.getsockname()[:2]
        return str(host), int(port)

    def app(self) -> Any:
        """The ASGI application (`umni.reporting.viewer_app`)."""
        from umni.reporting.viewer_app import viewer_app

        return viewer_app(self.viewer_data, self.hosts, lambda: status_entries(self.paths, self.status))

    def serve_forever(self) -> None:
        try:
            import uvicorn

            config = uvicorn.Config(
                self.app(), http="h11", ws="none", loop="asyncio", lifespan="off", proxy_headers=False,
                log_config=None, log_level="error", access_log=False,  # quiet: the terminal shows the URL and errors
                timeout_graceful_shutdown=GRACEFUL_STOP_SECONDS,
            )  # fmt: skip
            server = self._server = uvicorn.Server(config)
            if not self._stopping:  # read after _server is set: a `stop` in between reaches one or the other
                # the protocols' code and the price table load meanwhile (once the web server's own
                # imports are done: the first page does not wait for both)
                threading.Thread(target=self.viewer_data.warm, name="umni-view-warm", daemon=True).start()
                server.run(sockets=[self.socket])
        finally:
            self._stopped.set()

    def stop(self) -> None:
        """Ask `serve_forever` to stop: it returns once the requests in flight are answered (or
        after `GRACEFUL_STOP_SECONDS`). Takes no lock and raises nothing, so a signal handler may call it."""
        self._stopping = True
        server = self._server
        if server is not None:
            server.should_exit = True

    def shutdown(self) -> None:
        """`stop`, from another thread, and wait until `serve_forever` has returned."""
        self.stop()
        if self._server is not None:
            self._stopped.wait()

    def server_close(self) -> None:
        self.socket.close()


@contextmanager
def stopped_by_signals(server: ViewerServer) -> Iterator[None]:
    """While inside (in the main thread), Ctrl-C and SIGTERM stop `server` rather than raise: an
    exception raised wherever the main thread happens to be can land in an import's lock callback,
    where Python drops it, and the server then never stops. uvicorn takes both signals while it
    runs (for the same end) and passes them on to these handlers when it has stopped."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    for number, handler in previous.items():
        if handler is not signal.SIG_IGN:  # ignored (a background job's Ctrl-C, nohup): left so
            signal.signal(number, lambda *_: server.stop())
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def make_server(
    paths: list[Path], port: int = 0, *, host: str = "127.0.0.1", allowed_hosts: list[str] | None = None,
    status: StatusReader | None = None,
) -> ViewerServer:
    """A viewer server bound to `host` (port 0: any free port); call `serve_forever` to run it.
    It answers requests whose Host header is a loopback name, `host`, or one of `allowed_hosts`.
    With `status`, the status page shows `paths` as they are written, even before any run finished."""
    sock = bind(host, port)
    try:
        data = ViewerData(paths, in_progress=None if status is None else lambda path: "error" not in status_entries([path], status)[0])
    except BaseException:
        sock.close()
        raise
    return ViewerServer(sock, data, trusted_hosts(host, allowed_hosts), list(paths), status)


def serve(paths: list[Path], port: int = 0, open_browser: bool = False, host: str = "127.0.0.1", status: StatusReader | None = None) -> None:
    """Serve until Ctrl-C or SIGTERM, which stop the server (requests in flight get
    `GRACEFUL_STOP_SECONDS` to finish) and return: stopping is how a viewer ends. (Before the
    URL is printed, while the runs are read, they raise as anywhere else.)"""
    server = make_server(paths, port, host=host, status=status)
    try:
        with stopped_by_signals(server):
            for skipped in server.viewer_data.skipped:
                print(f"umni view: left out {skipped}: still being written (or interrupted); run its command again to finish it", file=sys.stderr)
            shown = f"[{host}]" if ":" in host else host
            url = f"http://{shown}:{server.server_address[1]}/"
            print(f"umni view: {url}  (Ctrl-C to stop)", flush=True)
            if open_browser:
                webbrowser.open(url)
            server.serve_forever()
    finally:
        server.server_close()
