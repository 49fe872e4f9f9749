"""Moving the openai/ backend's requests: HTTP clients, the fleet of servers, limits, errors, retries.

The transport owns everything between a built request and a parsed JSON body: one httpx client per
server (the API key lives only in their headers), the fleet that picks a server per call and sets a
failing one aside (`endpoints`), the discovery file a launcher rewrites, the deadline and size cap
of every exchange (`http_limits`), and the translation of every failure into one typed
`BackendError` that says whether trying again can help and how long the server asked to wait.
It never retries: the engine owns retrying, with a bound.
"""

from __future__ import annotations

import json
import os
import time
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx

from umni.plugin import BackendError, Refusal, mask, register_secret, truncate

from .endpoints import Endpoint, Fleet, FleetDown, public_url
from .http_limits import send_bounded, strict_json
from .openai_params import RESERVED_FIELDS, OpenAIParams
from .openai_replies import malformed
from .openai_requests import FormFile

#: Answers of a server that is down or restarting; another server of the fleet may well answer.
FAILOVER_STATUS = frozenset({502, 503, 504})
RETRYABLE_STATUS = frozenset({408, 409, 425, 429})
#: ``error.code`` values with which OpenAI's API refuses a request on content grounds (image prompts, mostly).
REFUSAL_CODES = frozenset({"moderation_blocked", "content_policy_violation", "content_filter"})
#: Seconds between looks at a discovery file (`base_url_file`).
DISCOVERY_LOOK_S = 1.0


def read_url_file(path: Path) -> list[str] | None:
    """The server URLs a discovery file lists (one a line, # comments), or None when it is missing,
    empty or holds a line that is not an http(s) URL."""
    try:
        lines = path.read_text().splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    urls = [line.strip().rstrip("/") for line in lines if line.strip() and not line.lstrip().startswith("#")]
    if not urls or any(urlsplit(u).scheme not in ("http", "https") or not urlsplit(u).hostname for u in urls):
        return None
    return urls


class Transport:
    """The servers of one model and the clients that reach them; `start` opens them, `aclose` ends them."""

    def __init__(self, model: str, params: OpenAIParams, base_urls: list[str], discovery: Path | None, notify: Any) -> None:
        self.model = model
        self.params = params
        #: Several servers of the same model (same weights, revision and serving configuration), chosen
        #: per call by `endpoints.Fleet`.
        self.base_urls = base_urls
        #: A file a launcher rewrites with the servers' URLs (`base_url_file`); its (mtime, size) when read.
        self.discovery = discovery
        self._discovered: tuple[int, int] | None = None
        self._next_look = 0.0
        self._notify = notify
        self.client: httpx.AsyncClient | None = None
        self._fleet: Fleet[httpx.AsyncClient] | None = None
        self.api_key: str | None = None
        self._headers: dict[str, str] = {}

    @property
    def base_url(self) -> str:
        return self.base_urls[0]

    @property
    def host(self) -> str:
        return urlsplit(self.base_url).hostname or ""

    def who(self) -> str:
        return f"openai/{self.model} at {self.host}"

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self, connections: int) -> None:
        if self.client is not None:
            return
        headers = {"Accept": "application/json"}
        self.api_key = os.environ.get(self.params.api_key_env) or None
        register_secret(self.api_key)
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        self._headers = headers
        self._connections = connections
        clients = [self._make_client(url) for url in self.base_urls]
        self._fleet = Fleet(
            list(zip(self.base_urls, clients, strict=True)),
            per_endpoint=self.params.per_endpoint,
            cool_off_s=self.params.cool_off,
            on_event=self._notify,
            adaptive=self.params.adaptive,
            latency_target=self.params.latency_target,
        )
        self.client = clients[0]

    def _make_client(self, url: str) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=url,
            headers=self._headers,
            timeout=httpx.Timeout(self.params.timeout_s, connect=self.params.connect_timeout_s),
            limits=httpx.Limits(max_connections=self._connections),
        )

    def _rediscover(self, fleet: Fleet[httpx.AsyncClient]) -> None:
        """Follow the discovery file: looked at once a second at most, re-read when it changed; a file
        caught mid-rewrite (missing, empty, a bad line) leaves the servers as they were."""
        if self.discovery is None or time.monotonic() < self._next_look:
            return
        self._next_look = time.monotonic() + DISCOVERY_LOOK_S
        try:
            stat = self.discovery.stat()
        except OSError:
            return
        if (stat.st_mtime_ns, stat.st_size) == self._discovered:
            return
        urls = read_url_file(self.discovery)
        if urls is not None:
            self._discovered = (stat.st_mtime_ns, stat.st_size)
            fleet.sync(urls, self._make_client)

    async def aclose(self) -> None:
        if self._fleet is not None:
            for endpoint in self._fleet.endpoints:
                await endpoint.client.aclose()
            self._fleet = None
            self.client = None

    def require_client(self) -> httpx.AsyncClient:
        if self.client is None:
            raise BackendError(f"{self.who()}: the backend was not started (call start() first)", retryable=False)
        return self.client

    def require_fleet(self) -> Fleet[httpx.AsyncClient]:
        self.require_client()
        assert self._fleet is not None
        return self._fleet

    # -- sending -----------------------------------------------------------------------------------

    async def send(self, request: httpx.Request, who: str, client: httpx.AsyncClient | None = None) -> httpx.Response:
        """Send within the attempt's deadline (`timeout`, for the whole exchange) and the size cap."""
        return await send_bounded(
            client or self.require_client(),
            request,
            max_bytes=self.params.max_response_bytes,
            deadline_s=self.params.timeout_s,
            who=who,
        )

    async def post_json(
        self,
        path: str,
        *,
        json_body: dict[str, Any] | None = None,
        data: dict[str, str] | None = None,
        files: list[FormFile] | None = None,
    ) -> tuple[Any, str]:
        """POST and return the parsed JSON body and the URL of the server that answered (a path its
        reply names is that server's); every failure becomes one typed BackendError."""
        self.require_client()
        try:
            response, who, server = await self._post_any(path, json_body=json_body, data=data, files=files)
        except httpx.TimeoutException as exc:
            raise BackendError(
                f"{self.who()} {path}: no response within the timeout "
                f"({type(exc).__name__}, timeout={self.params.timeout_s:g}s, connect {self.params.connect_timeout_s:g}s)",
                retryable=True,
            ) from None
        except httpx.TransportError as exc:
            detail = redact(str(exc) or type(exc).__name__, self.api_key)
            raise BackendError(f"{self.who()} {path}: connection failed ({detail})", retryable=True) from None
        if not response.is_success:
            if response.status_code == 400 and error_code(response) in REFUSAL_CODES:
                said = truncate(redact(server_message(response), self.api_key), 300)
                raise Refusal(f"{who} {path}: the server's safety system refused the request: {said}", raw=said)
            error = status_error(response, who=f"{who} {path}", secret=self.api_key)
            known = RESERVED_FIELDS | set(self.params.image_options) | {"logprobs"}
            extra = [k for k in (json_body or {}) if k not in known]
            named = [k for k in extra if k in str(error)]
            if response.status_code == 400 and named:
                raise BackendError(
                    f"{error} (the refused field {', '.join(named)} is an extra body field, from the spec's extra_body "
                    "or the node's request: a server that does not take it needs it left out, e.g. a WISE judge on a "
                    "hosted API with --option judge_thinking=server)",
                    retryable=False,
                ) from None
            raise error
        try:
            return strict_json(response.content), server
        except (ValueError, UnicodeDecodeError):  # JSONDecodeError, NaN/Infinity, out-of-range numbers
            raise malformed(self.who(), f"{path} returned a body that is not JSON ({len(response.content)} bytes)") from None

    async def _post_any(
        self,
        path: str,
        *,
        json_body: dict[str, Any] | None,
        data: dict[str, str] | None,
        files: list[FormFile] | None,
    ) -> tuple[httpx.Response, str, str]:
        """POST to the least busy server; returns its response, who answered (for messages) and its URL.

        A lone server's failures propagate as they are (the caller words them). In a fleet, a
        server that fails in a way another would not is set aside and the call goes to the next;
        when none is left, one retryable BackendError names them all.
        """
        fleet = self.require_fleet()
        self._rediscover(fleet)
        if len(fleet) == 1:
            _, endpoint = await fleet.acquire()
            began = time.monotonic()
            try:
                response = await self._post_to(endpoint, f"{self.who()} {path}", path, json_body, data, files)
            finally:
                fleet.release(endpoint)
            fleet.feedback(endpoint, throttled=response.status_code == 429, seconds=time.monotonic() - began)
            return response, self.who(), endpoint.url
        skip: set[int] = set()
        tried: dict[str, str] = {}
        while True:
            try:
                index, endpoint = await fleet.acquire(skip)
            except FleetDown as down:
                down.tried = tried
                wait = f"; the first is back in {down.retry_after:.1f}s" if down.retry_after is not None else ""
                raise BackendError(
                    f"openai/{self.model} {path}: no server of the fleet could take the call: {down.describe()}{wait}",
                    retryable=True,
                    retry_after=down.retry_after,
                ) from None
            skip.add(index)
            who = f"openai/{self.model} at {endpoint.name}"
            began = time.monotonic()
            try:
                response = await self._post_to(endpoint, f"{who} {path}", path, json_body, data, files)
            except (httpx.TimeoutException, httpx.TransportError) as exc:
                timed_out = isinstance(exc, httpx.TimeoutException)
                why = "timed out" if timed_out else f"connection failed: {type(exc).__name__}"
                tried[endpoint.name] = why
                fleet.set_aside(endpoint, why)
                continue
            except BackendError as exc:
                if not exc.retryable:  # a response over max_response_bytes: every server would send it
                    raise
                tried[endpoint.name] = "no complete response within the timeout"
                fleet.set_aside(endpoint, tried[endpoint.name])
                continue
            finally:
                fleet.release(endpoint)
            status = response.status_code
            fleet.feedback(endpoint, throttled=status == 429, seconds=time.monotonic() - began)
            if status in FAILOVER_STATUS or status == 429:
                tried[endpoint.name] = f"HTTP {status}" + (" (rate limited)" if status == 429 else "")
                fleet.set_aside(endpoint, tried[endpoint.name], parse_retry_after(response.headers))
                continue
            return response, who, endpoint.url

    async def _post_to(
        self,
        endpoint: Endpoint[httpx.AsyncClient],
        who: str,
        path: str,
        json_body: dict[str, Any] | None,
        data: dict[str, str] | None,
        files: list[FormFile] | None,
    ) -> httpx.Response:
        request = endpoint.client.build_request("POST", path, json=json_body, data=data, files=files)
        return await self.send(request, who, endpoint.client)

    async def fetch_image(self, url: str, server: str) -> bytes:
        """The bytes of an image handed out by URL. It lives on the server that made it (`server`, which
        answered the request), which takes the key; the key is never handed to a storage host named in
        a response. A path (SGLang's ``/v1/images/<id>/content``) is read against that server, as RFC
        3986 resolves it."""
        fleet = self.require_fleet()
        url = urljoin(server + "/", url)
        host = urlsplit(url).netloc
        own = [e.client for e in fleet.endpoints if host and urlsplit(e.url).netloc == host]
        client = own[0] if own else fleet.endpoints[0].client
        request = client.build_request("GET", url)
        if not own:
            request.headers.pop("Authorization", None)
        try:
            response = await self.send(request, f"{self.who()} image download", client)
        except httpx.TimeoutException:
            raise BackendError(f"{self.who()}: fetching the generated image timed out", retryable=True) from None
        except httpx.TransportError as exc:
            raise BackendError(
                f"{self.who()}: fetching the generated image failed ({type(exc).__name__})", retryable=True
            ) from None
        if response.status_code != 200:
            raise status_error(response, who=f"{self.who()} image download", secret=self.api_key)
        return response.content

    def servers(self) -> list[str]:
        several = len(self.base_urls) > 1 or self.discovery is not None
        return [public_url(url) for url in self.base_urls] if several else []


# -- errors ----------------------------------------------------------------------------------------


def status_error(response: httpx.Response, *, who: str, secret: str | None) -> BackendError:
    status = response.status_code
    retryable = status in RETRYABLE_STATUS or status >= 500
    message = truncate(redact(server_message(response), secret), 300)  # mask first, then cut
    retry_after = parse_retry_after(response.headers) if retryable else None
    wait = f"; server asks to wait {retry_after:g}s" if retry_after is not None else ""
    return BackendError(f"{who}: HTTP {status}: {message}{wait}", retryable=retryable, retry_after=retry_after)


def error_code(response: httpx.Response) -> str | None:
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    error = body.get("error") if isinstance(body, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, str) else None


def server_message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        text = response.text.strip()
        return text if text else response.reason_phrase or "no message"
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    if isinstance(error, str):
        return error
    for key in ("message", "detail"):  # vLLM / FastAPI style bodies
        if isinstance(body, dict) and body.get(key):
            return str(body[key])
    return json.dumps(body)


def parse_retry_after(headers: httpx.Headers) -> float | None:
    """Seconds to wait, from ``retry-after-ms``, or ``Retry-After`` as seconds or an HTTP date."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = (headers.get("retry-after") or "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def redact(text: str, secret: str | None) -> str:
    return mask(text, (secret,)) if secret else mask(text)
