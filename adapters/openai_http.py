"""OpenAI-compatible HTTP backend: hosted APIs, vLLM and SGLang behind one spec.

Spec: ``openai/<model>?base_url=...&api_key_env=...&timeout=...&temperature=...&max_tokens=...&size=...``.
Other parameters: ``top_p``, ``quality``, ``style`` (image generation only; edits take no style),
``response_format`` (images), ``connect_timeout``, ``mode`` (how `choose` decides: ``letter`` asks for
the option letter and parses the reply; ``likelihood`` compares the log-probabilities of the letters
as the first answer token) and ``roles`` (a comma list restricting which of understand, judge,
generate, edit this server fills; a text-only vLLM server, say, is ``roles=understand,judge``).

Reasoning models: ``token_field`` names the request field that carries the reply-length limit.
``auto`` (the default) sends ``max_completion_tokens`` to models whose name marks them as reasoning
models (OpenAI's o-series ``o1``/``o3``/``o4-mini``… and ``gpt-5``…, which refuse ``max_tokens``) and
``max_tokens`` to everything else (vLLM and SGLang accept it for every model); ``max_tokens`` or
``max_completion_tokens`` forces one. Reasoning models accept only their default sampling, so a
temperature a graph node asks for is not sent to them (a ``temperature=`` in the spec still is).

Extra body fields: ``extra_body`` is a JSON object merged into every JSON request (chat and image
generation; image edits get its scalar values as form fields), for what a server takes beyond the
common API, e.g. ``extra_body={"chat_template_kwargs":{"enable_thinking":false}}`` for vLLM/SGLang or
a vendor's own options. A node can ask for more (``RequestOptions.extra_body``, with its system
message and temperature); nested objects are merged, the spec winning where both set a field. A
node's ``chat_template_kwargs`` is not sent to OpenAI's own API (api.openai.com), which has no chat
templates and refuses the field.
Fields umni builds itself (``model``, ``messages``, the token limit, ``seed``…) are refused there:
they have their own parameters.

Replies: a refusal (``message.refusal``, ``finish_reason`` ``content_filter``, or a 400 whose
``error.code`` is ``moderation_blocked`` / ``content_policy_violation``) raises `Refusal` with its
text, recorded as a ``refusal`` failure, never parsed as an answer. A response without ``usage``
records its token counts as unknown (None), not 0, so its cost is unknown too.

Several servers of one model (a vLLM or SGLang fleet): ``base_url`` lists them, comma-separated;
the identity is then the model without the URLs (see README, "Several servers of one
OpenAI-compatible model"). ``per_endpoint`` caps the calls in flight on each server, and the
backend's concurrency becomes servers x ``per_endpoint`` unless ``concurrency`` is given (without
``per_endpoint``: servers x 4, uncapped per server). A server that is unreachable, resets, times out
or answers 502/503/504 is left out for ``cool_off`` seconds (default 10; its ``Retry-After`` when it
names one) and the call goes to another within the same attempt; a 429 leaves out that server only,
for as long as it asks; a request the server refuses on its merits (400, 401, 404, 422…) is not
sent elsewhere. When no server is left the attempt fails as retryable, naming the servers, so the
engine's retry policy applies. Both parameters are operational: not identity, not cache key.

Limits (see http_limits): ``timeout`` bounds a whole attempt, every byte read included;
``max_response_bytes`` (default 64 MiB) caps a response body and ``max_pixels`` (default 8192 x 8192)
a returned image, checked from its header before decoding. An image returned as a ``data:`` URL is
decoded from the reply itself under the same caps; only http(s) URLs are fetched.

Only fields every compatible server understands are sent (vLLM and SGLang serve the same chat API
but not every OpenAI extra), and optional ones (``temperature``, ``size``, ``quality``…) are sent
only when the spec names them, so the server's own default applies otherwise and the identity says
exactly what was asked for.

The backend never retries: the engine owns retrying (with a bound), so each failed attempt raises
exactly one `BackendError` that says whether trying again can help and, when the server named a
wait (``Retry-After``), how long to wait. The API key is read from the environment when the client
opens and lives only in the client's headers: it is kept out of identity, repr, logs and errors.
A ``base_url`` carrying ``user:password@`` is refused (`ConfigError` on ``base_url``): the HTTP client
would send those as Basic auth in place of the key, and a credential does not belong in a spec.
"""

from __future__ import annotations

import base64
import io
import json
import os
import re
import time
from collections.abc import Mapping, Sequence
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any, ClassVar, Literal
from urllib.parse import unquote_to_bytes, urlsplit

import httpx
from PIL import Image
from pydantic import Field, Json, PositiveFloat, PositiveInt, field_validator

from umni.plugin import (
    MODEL_ROLES,
    Backend,
    BackendError,
    BackendParams,
    ChoiceReply,
    ConfigError,
    ImageReply,
    Part,
    Refusal,
    RequestOptions,
    Spec,
    TextReply,
    Usage,
    mask,
    option_letter,
    parse_choice,
    register_secret,
    scrub,
    truncate,
)

from .endpoints import DEFAULT_COOL_OFF_S, Endpoint, Fleet, FleetDown, public_url
from .http_limits import (
    DEFAULT_MAX_PIXELS,
    DEFAULT_MAX_RESPONSE_BYTES,
    decode_image_bounded,
    send_bounded,
    strict_json,
)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
DEFAULT_TIMEOUT_S = 120.0
#: Connecting should be quick even when generating is slow; a dead host should fail fast.
MAX_CONNECT_TIMEOUT_S = 10.0
CHOICE_MODES = ("letter", "likelihood")
TOKEN_FIELDS = ("auto", "max_tokens", "max_completion_tokens")

#: Model names (the last path segment, lower case) of reasoning models: OpenAI's o-series and GPT-5.x.
REASONING_MODEL = re.compile(r"^(o\d+(?:$|[-_.])|gpt-5(?:$|[-_.]))")

#: Request fields umni builds itself; `extra_body` may not set them (each has its own parameter).
RESERVED_FIELDS = frozenset(
    {
        "model",
        "messages",
        "max_tokens",
        "max_completion_tokens",
        "seed",
        "temperature",
        "top_p",
        "logprobs",
        "top_logprobs",
        "prompt",
        "n",
        "image",
        "image[]",
    }
)

#: Request fields only self-hosted servers understand (vLLM and SGLang apply the model's chat template
#: themselves); OpenAI's own API has no such thing and refuses them, so a node's request for them is
#: not sent there (a spec's extra_body still is: the user asked for it by name).
SELF_HOSTED_FIELDS = frozenset({"chat_template_kwargs"})
OPENAI_API_HOST = "api.openai.com"

#: Parameters that change only how the server is reached or how many calls run at once.
CONNECTION_PARAMS = frozenset(
    {"base_url", "api_key_env", "roles", "connect_timeout", "token_field", "per_endpoint", "cool_off",
     "adaptive", "latency_target", "base_url_file"}
)
#: Answers of a server that is down or restarting; another server of the fleet may well answer.
FAILOVER_STATUS = frozenset({502, 503, 504})
#: Bounds on what a server can make umni read and decode (see http_limits); they change no answer.
LIMIT_PARAMS = frozenset({"max_response_bytes", "max_pixels"})


def is_reasoning_model(model: str) -> bool:
    """Whether `model` names a reasoning model that takes ``max_completion_tokens`` and only its default
    sampling (o1, o3-mini, o4-mini, gpt-5, gpt-5.1-mini …); a path prefix (``openai/gpt-5``) is ignored."""
    return bool(REASONING_MODEL.match(model.rsplit("/", 1)[-1].lower()))


class OpenAIParams(BackendParams):
    """The openai/ spec's parameters; pydantic converts the strings and words the errors."""

    operational: ClassVar[frozenset[str]] = BackendParams.operational | CONNECTION_PARAMS | LIMIT_PARAMS

    base_url: str = DEFAULT_BASE_URL
    api_key_env: str = DEFAULT_API_KEY_ENV
    connect_timeout: PositiveFloat | None = None
    temperature: float | None = Field(None, allow_inf_nan=False)
    top_p: float | None = Field(None, allow_inf_nan=False)
    max_tokens: PositiveInt | None = None
    token_field: Literal["auto", "max_tokens", "max_completion_tokens"] = "auto"
    extra_body: Json[dict[str, Any]] | None = None
    size: str | None = None
    quality: str | None = None
    style: str | None = None
    response_format: str | None = None
    mode: Literal["letter", "likelihood"] = "letter"
    roles: str | None = None
    max_response_bytes: PositiveInt = DEFAULT_MAX_RESPONSE_BYTES
    max_pixels: PositiveInt = DEFAULT_MAX_PIXELS
    per_endpoint: PositiveInt | None = None
    cool_off: PositiveFloat = DEFAULT_COOL_OFF_S
    #: AIMD calls in flight per server (up to per_endpoint, else 16): halved on 429 or a slow reply
    adaptive: bool = False
    latency_target: PositiveFloat | None = None
    #: a file listing the servers (one URL a line) that a launcher rewrites; re-read when it changes
    base_url_file: str | None = None

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        urls = [url.strip().rstrip("/") for url in value.split(",")]
        for url in urls:
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError(
                    f"base_url must be an http(s) URL such as {DEFAULT_BASE_URL}, or several separated by commas"
                )
        return ",".join(urls)

    @field_validator("extra_body")
    @classmethod
    def _free_fields(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value:
            check_extra_body(value, "extra_body")
        return value


def check_extra_body(body: Mapping[str, Any], where: str) -> None:
    """Refuse extra fields that would overwrite what umni builds itself."""
    taken = sorted(set(body) & RESERVED_FIELDS)
    if taken:
        raise ValueError(f"{where} may not set {', '.join(taken)}: umni sets those (use the spec parameter)")


#: The endpoints each role calls (under base_url); README "Which endpoints each role calls" says the same.
ENDPOINTS_BY_ROLE: dict[str, tuple[str, ...]] = {
    "understand": ("/chat/completions",),
    "judge": ("/chat/completions",),
    "generate": ("/images/generations", "/images/edits"),  # a prompt with context images goes to edits
    "edit": ("/images/edits",),
}
ENDPOINT_USERS = {
    "/images/generations": "role generate calls it (a plain vLLM or SGLang chat server has none: bind generate elsewhere)",
    "/images/edits": "roles edit, and generate with context images (GENIUS interleaved), call it",
}
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


#: Seconds each pre-flight request may take.
PREFLIGHT_TIMEOUT_S = 10.0


class OpenAIBackend(Backend):
    """Chat completions for understand/judge, the Images API for generate/edit."""

    provider: ClassVar[str] = "openai"
    roles: ClassVar[frozenset[str]] = frozenset(MODEL_ROLES)
    Params = OpenAIParams

    def __init__(self, spec: Spec) -> None:
        _refuse_url_credentials(spec)  # before parsing: a parameter error would quote the URL
        super().__init__(spec)
        params: OpenAIParams = self.params
        self.model = spec.name
        #: Several servers of the same model (same weights, revision and serving configuration), chosen
        #: per call by `endpoints.Fleet`.
        self.base_urls = params.base_url.split(",")
        #: A file a launcher rewrites with the servers' URLs (`base_url_file`); its (mtime, size) when read.
        self.discovery = Path(params.base_url_file) if params.base_url_file else None
        self._discovered: tuple[int, int] | None = None
        self._next_look = 0.0
        if self.discovery is not None:
            if "base_url" in spec.options:
                raise ConfigError(f"backend spec '{spec}': give base_url or base_url_file, not both", field="base_url_file")
            urls = read_url_file(self.discovery)
            if urls is None:
                raise ConfigError(
                    f"backend spec '{spec}': base_url_file {self.discovery} is missing, empty or holds a line that is "
                    "not an http(s) URL",
                    field="base_url_file",
                )
            self.base_urls = urls
        self.per_endpoint = params.per_endpoint
        self.cool_off_s = params.cool_off
        self.adaptive = params.adaptive
        self.latency_target = params.latency_target
        self.base_url = self.base_urls[0]
        self.host = urlsplit(self.base_url).hostname or ""
        self.api_key_env = params.api_key_env
        if "api_key_env" in spec.options and not os.environ.get(self.api_key_env):
            raise ConfigError(
                f"backend spec '{spec}': environment variable {self.api_key_env} (api_key_env) is not set",
                field="api_key_env",
            )
        self.timeout_s = params.timeout or DEFAULT_TIMEOUT_S
        self.connect_timeout_s = params.connect_timeout or min(self.timeout_s, MAX_CONNECT_TIMEOUT_S)
        self.temperature = params.temperature
        self.top_p = params.top_p
        self.max_tokens = params.max_tokens
        self.reasoning = is_reasoning_model(self.model)
        self.token_field = (
            ("max_completion_tokens" if self.reasoning else "max_tokens")
            if params.token_field == "auto"
            else params.token_field
        )
        self.extra_body: dict[str, Any] = dict(params.extra_body or {})
        self.mode = params.mode
        self.image_options = {
            k: getattr(params, k)
            for k in ("size", "quality", "response_format", "style")
            if getattr(params, k) is not None
        }
        self.max_response_bytes = params.max_response_bytes
        self.max_pixels = params.max_pixels
        register_secret(os.environ.get(self.api_key_env))
        self._roles = _parse_roles(spec, params.roles)
        self._client: httpx.AsyncClient | None = None
        self._fleet: Fleet[httpx.AsyncClient] | None = None
        self._api_key: str | None = None
        #: Everything this backend consumed since it started (each reply also carries its own share).
        self.total_usage = Usage(calls=0)

    # -- lifecycle ---------------------------------------------------------------------------------

    def fills(self) -> frozenset[str]:
        return self._roles

    def identity(self) -> dict[str, Any]:
        params = {k: v for k, v in self.spec.params if k not in self.operational_params}
        if self.extra_body:  # by content: two spellings of the same JSON are the same request
            params["extra_body"] = json.dumps(self.extra_body, sort_keys=True, separators=(",", ":"))
        if len(self.base_urls) > 1 or self.discovery is not None:  # replicas of one served model: the answers are the model's
            return {"provider": self.provider, "name": self.model, "params": params}
        return {"provider": self.provider, "name": self.model, "endpoint": _endpoint(self.base_url), "params": params}

    @property
    def concurrency(self) -> int:
        """Calls in flight across the fleet: the spec's ``concurrency``, else servers x ``per_endpoint``
        (servers x the default when no per-server cap is set)."""
        if "concurrency" in self.spec.options:
            return super().concurrency
        return len(self.base_urls) * (self.per_endpoint or self.default_concurrency)

    def servers(self) -> list[str]:
        several = len(self.base_urls) > 1 or self.discovery is not None
        return [public_url(url) for url in self.base_urls] if several else []

    @property
    def pooled(self) -> bool:
        """A fleet sized by ``per_endpoint`` keeps its lane under a run-wide ``--concurrency`` (as a
        Ray pool does): that option would otherwise leave its servers idle or overload them."""
        return self.per_endpoint is not None

    def __repr__(self) -> str:
        return f"OpenAIBackend(model={self.model!r}, host={self.host!r}, roles={sorted(self._roles)})"

    async def _send(self, request: httpx.Request, who: str, client: httpx.AsyncClient | None = None) -> httpx.Response:
        """Send within the attempt's deadline (`timeout`, for the whole exchange) and the size cap."""
        return await send_bounded(
            client or self._require_client(), request, max_bytes=self.max_response_bytes, deadline_s=self.timeout_s, who=who
        )

    async def start(self) -> None:
        if self._client is not None:
            return
        headers = {"Accept": "application/json"}
        self._api_key = os.environ.get(self.api_key_env) or None
        register_secret(self._api_key)
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        self._headers = headers
        clients = [self._make_client(url) for url in self.base_urls]
        self._fleet = Fleet(
            list(zip(self.base_urls, clients, strict=True)),
            per_endpoint=self.per_endpoint,
            cool_off_s=self.cool_off_s,
            on_event=self.notify,
            adaptive=self.adaptive,
            latency_target=self.latency_target,
        )
        self._client = clients[0]

    def _make_client(self, url: str) -> httpx.AsyncClient:
        connections = max(self.per_endpoint or self.concurrency, 1) * 2
        return httpx.AsyncClient(
            base_url=url,
            headers=self._headers,
            timeout=httpx.Timeout(self.timeout_s, connect=self.connect_timeout_s),
            limits=httpx.Limits(max_connections=connections),
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
            self._client = None

    # -- pre-flight ----------------------------------------------------------------------------------

    async def preflight(self, roles: frozenset[str]) -> list[str]:
        """One GET of ``/models`` per server (reachable, key accepted, model served), and for bound image
        roles an empty POST to each images endpoint they call (404: the server has none; any other
        answer, such as 400 for the missing prompt, means it is there). No request costs a model call."""
        paths = {path for role in roles for path in ENDPOINTS_BY_ROLE.get(role, ())}
        problems: list[str] = []
        key = os.environ.get(self.api_key_env) or None
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        for url in self.base_urls:
            who = f"openai/{self.model} at {public_url(url)}"
            async with httpx.AsyncClient(base_url=url, headers=headers, timeout=PREFLIGHT_TIMEOUT_S) as client:
                problems += await self._probe(client, who, key, sorted(paths - {"/chat/completions"}))
        return problems

    async def _probe(self, client: httpx.AsyncClient, who: str, key: str | None, image_paths: list[str]) -> list[str]:
        try:
            listed = await client.get("/models")
        except httpx.HTTPError as exc:
            return [f"{who}: no answer ({type(exc).__name__}); is base_url right and the server up?"]
        if listed.status_code in (401, 403):
            given = f"the key from {self.api_key_env}" if key else f"no key ({self.api_key_env} is not set)"
            return [f"{who}: HTTP {listed.status_code}, the server refused {given}"]
        problems = []
        if listed.status_code == 200:
            try:
                served = [str(m.get("id")) for m in listed.json().get("data", []) if isinstance(m, dict)]
            except (ValueError, AttributeError):
                served = []
            if served and self.model not in served:
                problems.append(f"{who}: the server does not serve '{self.model}' (it serves {', '.join(served[:5])}); wrong model name?")
        for path in image_paths:
            try:
                answer = await (client.post(path, json={}) if path == "/images/generations" else client.post(path, data={"x": ""}))
            except httpx.HTTPError:
                continue  # it answered /models: a failure here is left to the run's retries
            if answer.status_code in (404, 405):
                problems.append(f"{who}: no {path} endpoint (HTTP {answer.status_code}); {ENDPOINT_USERS[path]}")
        return problems

    # -- understand / judge ------------------------------------------------------------------------

    async def respond(
        self, parts: Sequence[Part], *, max_tokens: int = 512, seed: int = 0, options: RequestOptions | None = None
    ) -> TextReply:
        body = self._chat_body(parts, max_tokens=self.max_tokens or max_tokens, seed=seed, options=options)
        data, elapsed = await self._post_json("/chat/completions", json_body=body)
        text = _message_text(data)
        usage = self._record(_chat_usage(data, images_in=_count_images(parts)))
        return TextReply(text=text, usage=usage)

    async def choose(self, parts: Sequence[Part], options: Sequence[str], *, seed: int = 0) -> ChoiceReply:
        if not options:
            raise ConfigError("choose() needs at least one option")
        prompt = [*parts, _options_block(options)]
        if self.mode == "likelihood":
            return await self._choose_by_likelihood(prompt, options, seed=seed)
        body = self._chat_body(prompt, max_tokens=self.max_tokens or 16, seed=seed)
        data, _ = await self._post_json("/chat/completions", json_body=body)
        text = _message_text(data)
        usage = self._record(_chat_usage(data, images_in=_count_images(parts)))
        return ChoiceReply(index=parse_option_letter(text, options), text=text, mode="letter", usage=usage)

    async def _choose_by_likelihood(self, prompt: list[Part], options: Sequence[str], *, seed: int) -> ChoiceReply:
        """Score the option letters by the log-probability of the first answer token.

        Asks for one token with its top alternatives (vLLM, SGLang and OpenAI all return them); the
        best-scoring valid letter wins. No letter among the alternatives means no choice (None).
        """
        body = self._chat_body(prompt, max_tokens=1, seed=seed)
        body["logprobs"] = True
        body["top_logprobs"] = 20
        data, _ = await self._post_json("/chat/completions", json_body=body)
        letters = {option_letter(i): i for i in range(len(options))}
        best: tuple[float, int] | None = None
        for candidate in _top_logprobs(data):
            index = letters.get(str(candidate.get("token", "")).strip().strip("().").upper())
            logprob = candidate.get("logprob")
            if index is not None and isinstance(logprob, (int, float)) and (best is None or logprob > best[0]):
                best = (float(logprob), index)
        usage = self._record(_chat_usage(data, images_in=_count_images(prompt)))
        text = _message_text(data, allow_empty=True)
        return ChoiceReply(index=best[1] if best else None, text=text, mode="likelihood", usage=usage)

    def _chat_body(
        self, parts: Sequence[Part], *, max_tokens: int, seed: int, options: RequestOptions | None = None
    ) -> dict[str, Any]:
        """The chat request: the node's system message first, the limit in the model's token field,
        sampling the spec names (or, for a model that takes it, the node's temperature), then the
        extra body fields (the node's, overridden by the spec's)."""
        messages: list[dict[str, Any]] = []
        if options is not None and options.system:
            messages.append({"role": "system", "content": options.system})
        messages.append({"role": "user", "content": chat_content(parts)})
        body: dict[str, Any] = {"model": self.model, "messages": messages, self.token_field: max_tokens, "seed": seed}
        temperature = self.temperature
        if temperature is None and options is not None and not self.reasoning:
            temperature = options.temperature
        if temperature is not None:
            body["temperature"] = temperature
        if self.top_p is not None:
            body["top_p"] = self.top_p
        extra: dict[str, Any] = {}
        if options is not None and options.extra_body:
            try:
                check_extra_body(options.extra_body, "a node's extra_body")
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
            extra = _merged(extra, options.extra_body)
            if self.host == OPENAI_API_HOST:
                extra = {k: v for k, v in extra.items() if k not in SELF_HOSTED_FIELDS}
        extra = _merged(extra, self.extra_body)
        body.update(extra)
        return body

    # -- generate / edit ---------------------------------------------------------------------------

    async def generate(self, parts: Sequence[Part], *, seed: int = 0) -> ImageReply:
        """Text-to-image; a prompt that carries images goes to the edits endpoint with them.

        The Images API takes one prompt string, so text parts are joined in order. The seed is
        not sent: hosted image APIs reject it, so repeat variation comes from the server.
        """
        images = [p for p in parts if isinstance(p, Image.Image)]
        prompt = "\n".join(p for p in parts if isinstance(p, str))
        if images:
            return await self.edit(images, prompt, seed=seed)
        body = {"model": self.model, "prompt": prompt, "n": 1, **self.image_options, **self.extra_body}
        data, _ = await self._post_json("/images/generations", json_body=body)
        image = await self._first_image(data)
        usage = self._record(_image_usage(data, images_in=0))
        return ImageReply(image=image, usage=usage)

    async def edit(self, images: Sequence[Image.Image], instruction: str, *, seed: int = 0) -> ImageReply:
        if not images:
            raise ConfigError("edit() needs at least one input image")
        field = "image" if len(images) == 1 else "image[]"
        files = [(field, (f"image_{i}.png", png_bytes(img), "image/png")) for i, img in enumerate(images)]
        # The edits endpoint takes no `style` (a generation option); sending it is an error on OpenAI's API.
        options = {k: v for k, v in self.image_options.items() if k != "style"}
        form = {"model": self.model, "prompt": instruction, "n": "1", **options, **_form_fields(self.extra_body)}
        data, _ = await self._post_json("/images/edits", data=form, files=files)
        image = await self._first_image(data)
        usage = self._record(_image_usage(data, images_in=len(images)))
        return ImageReply(image=image, usage=usage)

    async def _first_image(self, data: Any) -> Image.Image:
        items = data.get("data") if isinstance(data, dict) else None
        first = items[0] if isinstance(items, list) and items and isinstance(items[0], dict) else None
        if first is None:
            raise self._malformed("the image response has no data[0] entry")
        if first.get("b64_json"):
            try:
                raw = base64.b64decode(first["b64_json"], validate=False)
            except (ValueError, TypeError) as exc:
                raise self._malformed(f"data[0].b64_json is not base64 ({exc})") from None
        elif first.get("url"):
            url = str(first["url"]).strip()
            scheme = urlsplit(url).scheme.lower() if ":" in url else ""
            if scheme == "data":  # the image itself, inside the reply the size cap already bounded
                raw = self._data_url_bytes(url)
                source = f"{self.model} at {self.host} (a data: URL)"
                return decode_image(raw, source=source, max_pixels=self.max_pixels)
            if scheme not in ("", "http", "https"):
                raise BackendError(
                    f"{self._who()}: data[0].url has the scheme '{truncate(scheme, 20)}'; an image is fetched from an "
                    "http(s) URL or read from a data: URL",
                    retryable=False,
                )
            raw = await self._fetch_image(url)
        else:
            raise self._malformed("data[0] has neither b64_json nor url")
        return decode_image(raw, source=f"{self.model} at {self.host}", max_pixels=self.max_pixels)

    def _data_url_bytes(self, url: str) -> bytes:
        """The bytes a ``data:[<media type>][;base64],<data>`` URL carries (RFC 2397), read here: it is
        never a path to fetch. A declared media type other than an image is refused by name."""
        header, comma, payload = url[len("data:") :].partition(",")
        if not comma:
            raise self._malformed("data[0].url is a data: URL with no comma before its data")
        fields = [f.strip().lower() for f in header.split(";")]
        media = fields[0]
        if media and not media.startswith("image/") and media != "application/octet-stream":
            raise BackendError(
                f"{self._who()}: data[0].url is a data: URL of {truncate(media, 60)}, not an image", retryable=False
            )
        if "base64" in fields[1:]:
            try:
                return base64.b64decode("".join(payload.split()), validate=True)
            except (ValueError, TypeError) as exc:
                raise self._malformed(f"data[0].url is a data: URL whose base64 does not decode ({exc})") from None
        return unquote_to_bytes(payload)

    async def _fetch_image(self, url: str) -> bytes:
        # An image handed out by URL lives on the server that made it, which takes the key.
        fleet = self._require_fleet()
        host = urlsplit(url).netloc
        own = [e.client for e in fleet.endpoints if host and urlsplit(e.url).netloc == host]
        client = own[0] if own else fleet.endpoints[0].client
        request = client.build_request("GET", url)
        if not own:
            # The key belongs to the API server; never hand it to a storage host named in a response.
            request.headers.pop("Authorization", None)
        try:
            response = await self._send(request, f"{self._who()} image download", client)
        except httpx.TimeoutException:
            raise BackendError(f"{self._who()}: fetching the generated image timed out", retryable=True) from None
        except httpx.TransportError as exc:
            raise BackendError(
                f"{self._who()}: fetching the generated image failed ({type(exc).__name__})", retryable=True
            ) from None
        if response.status_code != 200:
            raise _status_error(response, who=f"{self._who()} image download", secret=self._api_key)
        return response.content

    # -- HTTP --------------------------------------------------------------------------------------

    async def _post_json(
        self,
        path: str,
        *,
        json_body: dict[str, Any] | None = None,
        data: dict[str, str] | None = None,
        files: list[tuple[str, tuple[str, bytes, str]]] | None = None,
    ) -> tuple[Any, float]:
        """POST and return the parsed JSON body; every failure becomes one typed BackendError."""
        self._require_client()
        started = time.perf_counter()
        try:
            response, who = await self._post_any(path, json_body=json_body, data=data, files=files)
        except httpx.TimeoutException as exc:
            raise BackendError(
                f"{self._who()} {path}: no response within the timeout "
                f"({type(exc).__name__}, timeout={self.timeout_s:g}s, connect {self.connect_timeout_s:g}s)",
                retryable=True,
            ) from None
        except httpx.TransportError as exc:
            detail = _redact(str(exc) or type(exc).__name__, self._api_key)
            raise BackendError(f"{self._who()} {path}: connection failed ({detail})", retryable=True) from None
        elapsed = time.perf_counter() - started
        if not response.is_success:
            if response.status_code == 400 and _error_code(response) in REFUSAL_CODES:
                said = truncate(_redact(_server_message(response), self._api_key), 300)
                raise Refusal(f"{who} {path}: the server's safety system refused the request: {said}", raw=said)
            error = _status_error(response, who=f"{who} {path}", secret=self._api_key)
            extra = [k for k in (json_body or {}) if k not in RESERVED_FIELDS | set(self.image_options) | {"logprobs"}]
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
            return strict_json(response.content), elapsed
        except (ValueError, UnicodeDecodeError):  # JSONDecodeError, NaN/Infinity, out-of-range numbers
            raise self._malformed(f"{path} returned a body that is not JSON ({len(response.content)} bytes)") from None

    async def _post_any(
        self,
        path: str,
        *,
        json_body: dict[str, Any] | None,
        data: dict[str, str] | None,
        files: list[tuple[str, tuple[str, bytes, str]]] | None,
    ) -> tuple[httpx.Response, str]:
        """POST to the least busy server; returns its response and who answered (for messages).

        A lone server's failures propagate as they are (the caller words them). In a fleet, a
        server that fails in a way another would not is set aside and the call goes to the next;
        when none is left, one retryable BackendError names them all.
        """
        fleet = self._require_fleet()
        self._rediscover(fleet)
        if len(fleet) == 1:
            _, endpoint = await fleet.acquire()
            began = time.monotonic()
            try:
                response = await self._post_to(endpoint, f"{self._who()} {path}", path, json_body, data, files)
            finally:
                fleet.release(endpoint)
            fleet.feedback(endpoint, throttled=response.status_code == 429, seconds=time.monotonic() - began)
            return response, self._who()
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
            return response, who

    async def _post_to(
        self,
        endpoint: Endpoint[httpx.AsyncClient],
        who: str,
        path: str,
        json_body: dict[str, Any] | None,
        data: dict[str, str] | None,
        files: list[tuple[str, tuple[str, bytes, str]]] | None,
    ) -> httpx.Response:
        request = endpoint.client.build_request("POST", path, json=json_body, data=data, files=files)
        return await self._send(request, who, endpoint.client)

    def _require_fleet(self) -> Fleet[httpx.AsyncClient]:
        self._require_client()
        assert self._fleet is not None
        return self._fleet

    def _require_client(self) -> httpx.AsyncClient:
        if self._client is None:
            raise BackendError(f"{self._who()}: the backend was not started (call start() first)", retryable=False)
        return self._client

    def _who(self) -> str:
        return f"openai/{self.model} at {self.host}"

    def _malformed(self, what: str) -> BackendError:
        # A garbled body is usually a proxy or an overloaded server mid-restart: worth another try.
        return BackendError(f"{self._who()}: malformed response: {what}", retryable=True)

    def _record(self, usage: Usage) -> Usage:
        self.total_usage.add(usage)
        return usage


# -- request building ------------------------------------------------------------------------------


def chat_content(parts: Sequence[Part]) -> list[dict[str, Any]]:
    """Interleaved parts as chat content: text parts and PNG data-URI image parts, in order."""
    content: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, Image.Image):
            url = "data:image/png;base64," + base64.b64encode(png_bytes(part)).decode("ascii")
            content.append({"type": "image_url", "image_url": {"url": url}})
        elif isinstance(part, str):
            content.append({"type": "text", "text": part})
        else:
            raise ConfigError(f"a prompt part must be text or a PIL image, got {type(part).__name__}")
    return content


def png_bytes(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def _options_block(options: Sequence[str]) -> str:
    lines = [f"{option_letter(i)}. {text}" for i, text in enumerate(options)]
    last = option_letter(len(options) - 1)
    return "\n\nOptions:\n" + "\n".join(lines) + f"\n\nReply with the letter of the correct option (A-{last}) only."


# -- response reading ------------------------------------------------------------------------------


def _message_text(data: Any, *, allow_empty: bool = False) -> str:
    """The reply text of a chat completion; a refusal raises `Refusal` with the model's words."""
    try:
        choice = data["choices"][0]
        message = choice["message"]
    except (KeyError, IndexError, TypeError):
        raise BackendError("malformed response: no choices[0].message in the chat completion", retryable=True) from None
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list):  # some servers return content parts even for text
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    refusal = message.get("refusal") if isinstance(message, dict) else None
    if isinstance(refusal, str) and refusal.strip():
        raise Refusal(f"the model refused: {truncate(scrub(refusal), 300)}", raw=scrub(refusal))
    if isinstance(choice, dict) and choice.get("finish_reason") == "content_filter":
        said = scrub(str(content or ""))
        raise Refusal(
            "the server's content filter stopped the reply (finish_reason content_filter)"
            + (f": {truncate(said, 300)}" if said else ""),
            raw=said or None,
        )
    if content is None:
        if allow_empty:
            return ""
        content = ""
    return scrub(str(content))  # a key echoed in a reply is masked before anything stores it


def _top_logprobs(data: Any) -> list[dict[str, Any]]:
    try:
        first = data["choices"][0]["logprobs"]["content"][0]
    except (KeyError, IndexError, TypeError):
        raise BackendError(
            "the server returned no logprobs (choices[0].logprobs.content): mode=likelihood needs a server "
            "that supports them; use mode=letter for this one",
            retryable=False,
        ) from None
    candidates = list(first.get("top_logprobs") or [])
    candidates.append({"token": first.get("token", ""), "logprob": first.get("logprob")})
    return [c for c in candidates if isinstance(c, dict)]


def _chat_usage(data: Any, *, images_in: int) -> Usage:
    """Tokens as the server counted them; a count it did not send is unknown (None), never 0."""
    usage = data.get("usage") if isinstance(data, dict) else None
    usage = usage if isinstance(usage, dict) else {}
    return Usage(
        calls=1,
        input_tokens=_count(usage.get("prompt_tokens", usage.get("input_tokens"))),
        output_tokens=_count(usage.get("completion_tokens", usage.get("output_tokens"))),
        images_in=images_in,
    )


def _image_usage(data: Any, *, images_in: int) -> Usage:
    usage = _chat_usage(data, images_in=images_in)
    usage.images_out = 1
    return usage


def _count_images(parts: Sequence[Part]) -> int:
    return sum(isinstance(p, Image.Image) for p in parts)


def decode_image(raw: bytes, *, source: str, max_pixels: int = DEFAULT_MAX_PIXELS) -> Image.Image:
    """Decode fully now, so a truncated download fails here (retryable), not later in scoring; an
    image over `max_pixels` is refused from its header, before its pixels are decoded."""
    return decode_image_bounded(raw, max_pixels=max_pixels, source=source)


# -- errors ----------------------------------------------------------------------------------------

RETRYABLE_STATUS = frozenset({408, 409, 425, 429})


def _status_error(response: httpx.Response, *, who: str, secret: str | None) -> BackendError:
    status = response.status_code
    retryable = status in RETRYABLE_STATUS or status >= 500
    message = truncate(_redact(_server_message(response), secret), 300)  # mask first, then cut
    retry_after = parse_retry_after(response.headers) if retryable else None
    wait = f"; server asks to wait {retry_after:g}s" if retry_after is not None else ""
    return BackendError(f"{who}: HTTP {status}: {message}{wait}", retryable=retryable, retry_after=retry_after)


#: ``error.code`` values with which OpenAI's API refuses a request on content grounds (image prompts, mostly).
REFUSAL_CODES = frozenset({"moderation_blocked", "content_policy_violation", "content_filter"})


def _error_code(response: httpx.Response) -> str | None:
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    error = body.get("error") if isinstance(body, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, str) else None


def _server_message(response: httpx.Response) -> str:
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


def _redact(text: str, secret: str | None) -> str:
    return mask(text, (secret,)) if secret else mask(text)


# -- answer parsing --------------------------------------------------------------------------------

#: The engine's one multiple-choice reading (umni.choices); kept under this name for callers.
parse_option_letter = parse_choice


def _endpoint(base_url: str) -> str:
    """The base URL as identity: scheme, host, port (the scheme's default when absent) and path.
    Two servers on one host differ by port or path, so they never share cache entries. Userinfo
    (credentials) is left out: it is not identity, and identity is written to run.json."""
    parts = urlsplit(base_url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.scheme}://{(parts.hostname or '').lower()}:{port}{parts.path.rstrip('/')}"


# -- spec helpers ----------------------------------------------------------------------------------


def _refuse_url_credentials(spec: Spec) -> None:
    """Refuse ``user:password@`` in any ``base_url``. The HTTP client would turn it into Basic auth
    that replaces the API key's Bearer header on every request, and a credential in a spec would be
    on the command line. The message names the field, never the user or the password."""
    raw = spec.options.get("base_url")
    if not raw:
        return
    for url in raw.split(","):
        try:
            netloc = urlsplit(url.strip()).netloc
        except ValueError:
            continue  # not a URL at all: the parameter check words that
        if "@" in netloc:
            raise ConfigError(
                f"backend spec 'openai/{spec.name}': base_url carries user information (user:password@host); "
                "umni does not send credentials from a URL. Give the key through the environment variable "
                "that api_key_env names (default OPENAI_API_KEY): it is sent as a Bearer token",
                field="base_url",
            )


def _parse_roles(spec: Spec, raw: str | None) -> frozenset[str]:
    if raw is None:
        return frozenset(MODEL_ROLES)
    roles = frozenset(r.strip() for r in raw.split(",") if r.strip())
    bad = roles - set(MODEL_ROLES)
    if not roles or bad:
        raise ConfigError(f"backend spec '{spec}': roles must be a comma list of {', '.join(MODEL_ROLES)}, got '{raw}'")
    return roles


def _count(value: Any) -> int | None:
    """A token count from the response, or None when the server did not give a usable one."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value)


def _merged(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """`base` with `over` laid on top; nested objects are merged key by key, `over` winning."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _merged(out[key], value)
        else:
            out[key] = value
    return out


def _form_fields(extra: Mapping[str, Any]) -> dict[str, str]:
    """Extra body fields as multipart form fields (image edits): scalars only, JSON-spelled."""
    fields = {}
    for key, value in extra.items():
        if isinstance(value, (dict, list)):
            raise ConfigError(
                f"extra_body field '{key}' is an object or a list; image edits (a form) take only scalar fields"
            )
        fields[key] = value if isinstance(value, str) else json.dumps(value)
    return fields


__all__ = [
    "OpenAIBackend",
    "OpenAIParams",
    "is_reasoning_model",
    "chat_content",
    "parse_option_letter",
    "parse_retry_after",
    "decode_image",
]
