"""The viewer's web application: its routes on Starlette, behind the library's trusted-host and gzip
middleware, its page and scripts served by Starlette's StaticFiles.

Imported only when the server starts serving (after the URL is printed), so `umni view` prints its
URL without waiting for Starlette's import. The routes are listed in `umni.reporting.viewer`.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from umni.reporting.viewer_data import ViewerData

__all__ = ["MAX_THUMBS", "viewer_app"]

#: Thumbnails kept in memory by the server (about 20 KiB each).
MAX_THUMBS = 4000
#: Bodies at least this long are sent gzip-compressed to a client that accepts it (images never: PNG is compressed).
GZIP_FROM_BYTES = 1024
_RUN_INDEX = re.compile(r"^[0-9]{1,9}$")  # ASCII digits only: int() would take "²" or "١" and 5,000 digits
_STATIC = ("umni.reporting", "viewer_static")


class _Static(StaticFiles):
    """The page's files, revalidated on each load (a newer umni serves a newer page)."""

    def file_response(self, *args: Any, **kwargs: Any) -> Response:
        response = super().file_response(*args, **kwargs)
        response.headers.setdefault("Cache-Control", "no-cache")
        return response


def _json(value: Any) -> Response:
    return _body(json.dumps(value, ensure_ascii=False).encode())


def _body(body: bytes) -> Response:
    return Response(body, media_type="application/json", headers={"Cache-Control": "no-cache"})


def _missing(unreadable: list[dict[str, Any]] | None = None) -> Response:
    """404; for an image, with why the stores that could not be read were left out."""
    said = "".join(f"; images in {e['blobs']} cannot be shown: {e['error']}" for e in unreadable or [])
    return PlainTextResponse("Not Found" + said, status_code=404)


def _unforeseen(request: Request, error: Exception) -> Response:
    """A request the routes did not foresee: an answer saying what failed (uvicorn logs the traceback)."""
    return PlainTextResponse(f"{type(error).__name__}: {error}"[:200], status_code=500)


def viewer_app(data: ViewerData, allowed_hosts: list[str], status: Callable[[], list[dict[str, Any]]]) -> Starlette:
    """The application over `data`, answering only requests whose Host is one of `allowed_hosts`
    (as TrustedHostMiddleware compares them: lower case, IPv6 literals in brackets); `status()`
    gives /api/status its entries, read on every request."""
    static = _Static(packages=[_STATIC], html=True)
    pages = static.get_directories(packages=[_STATIC])[0]
    thumbs: dict[str, bytes] = {}
    lock = threading.Lock()

    def page(name: str) -> Callable[[Request], Response]:
        def endpoint(request: Request) -> Response:
            return FileResponse(f"{pages}/{name}", headers={"Cache-Control": "no-cache"})

        return endpoint

    def cases(request: Request) -> Response:
        return _json(data.query(dict(request.query_params)))

    def case_by_key(request: Request) -> Response:
        found = data.case(request.query_params.get("run", ""), request.query_params.get("id", ""))
        return _missing() if found is None else _json(found)

    def case_by_position(request: Request) -> Response:  # /api/case/<position among the runs>/<case id>
        run, case_id = request.path_params["run"], request.path_params["case_id"]
        found = data.case(int(run), case_id) if _RUN_INDEX.match(run) else None
        return _missing() if found is None else _json(found)

    def image(thumb: bool) -> Callable[[Request], Response]:
        def endpoint(request: Request) -> Response:
            sha = request.path_params["sha"]
            with lock:
                body = thumbs.get(sha) if thumb else None
            if body is None:
                body = data.image(sha, thumb=thumb)
                if body is not None and thumb:
                    with lock:
                        if len(thumbs) >= MAX_THUMBS:  # bounded memory; the browser caches them too
                            thumbs.clear()
                        thumbs[sha] = body
            if body is None:
                return _missing(data.store_errors())
            return Response(body, media_type="image/png", headers={"Cache-Control": "max-age=86400"})

        return endpoint

    routes: list[BaseRoute] = [
        Route("/api/status", lambda request: _json(status())),
        Route("/api/index.json", lambda request: _body(data.index_json())),
        Route("/api/tables.json", lambda request: _json(data.tables())),
        Route("/api/cases", cases),
        Route("/api/case", case_by_key),
        Route("/api/case/{run}/{case_id:path}", case_by_position),
        Route("/img/{sha}.png", image(thumb=False)),
        Route("/thumb/{sha}.png", image(thumb=True)),
        Route("/status", page("status.html")),
    ]
    if not data.runs:  # nothing finished yet: the status page is the front page
        routes.append(Route("/", page("status.html")))
    routes.append(Mount("/", static))
    return Starlette(
        routes=routes,
        middleware=[
            Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts, www_redirect=False),
            Middleware(GZipMiddleware, minimum_size=GZIP_FROM_BYTES, compresslevel=5),
        ],
        exception_handlers={Exception: _unforeseen},
    )
