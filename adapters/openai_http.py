"""OpenAI-compatible HTTP backend: hosted APIs, vLLM and SGLang behind one ``openai/<model>?…`` spec.

The backend composes four parts, each in its own module: the spec's parameters as one typed object
(`openai_params`), the request bodies built from them (`openai_requests`), the transport that sends
them to one server or a fleet within the deadline and size limits (`openai_transport`), and the
reading of the replies (`openai_replies`). What a user may set, and what each setting does, is in
the documentation (Models: OpenAI-compatible servers); this module wires the parts to the roles.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal
from urllib.parse import urlsplit

import anyio
from PIL import Image

from umni.plugin import (
    EDIT,
    GENERATE,
    MODEL_ROLES,
    Backend,
    BackendError,
    ChoiceReply,
    ConfigError,
    ImageReply,
    Part,
    RequestOptions,
    RoleProvenance,
    Sampling,
    Spec,
    TextReply,
    Usage,
    option_letter,
    register_secret,
)

from .openai_params import IMAGE_REQUEST_PARAMS, OPENAI_API_HOST, OpenAIParams, is_reasoning_model
from .openai_preflight import IMAGE_PATHS, ServerReport, probe_server
from .openai_replies import (
    ImageBytes,
    chat_image,
    chat_usage,
    decode_image,
    first_image,
    image_usage,
    message_text,
    parse_option_letter,
    top_logprobs,
)
from .openai_requests import RequestBuilder, chat_content, count_images, options_block
from .openai_transport import Transport, parse_retry_after, read_url_file

#: The images endpoints each image role may call (under base_url) when images go through them.
IMAGE_ENDPOINTS_BY_ROLE: dict[str, tuple[str, ...]] = {
    GENERATE: IMAGE_PATHS,  # a prompt with context images goes to edits
    EDIT: ("/images/edits",),
}
ENDPOINT_USERS = {
    "/images/generations": "role generate calls it (a plain vLLM or SGLang chat server has none: bind generate elsewhere, "
    "or draw through chat with image_api=chat)",
    "/images/edits": "roles edit, and generate with context images (GENIUS interleaved), call it",
}
ImageAPI = Literal["chat", "images"]


class OpenAIBackend(Backend):
    """Chat completions for understand/judge; generate/edit through the images endpoints or through
    chat completions with image output (`image_api`: vLLM-Omni serves unified models that way)."""

    provider: ClassVar[str] = "openai"
    roles: ClassVar[frozenset[str]] = frozenset(MODEL_ROLES)
    Params = OpenAIParams

    def __init__(self, spec: Spec) -> None:
        _refuse_url_credentials(spec)  # before parsing: a parameter error would quote the URL
        super().__init__(spec)
        self.params: OpenAIParams
        params = self.params
        self.model = spec.name
        base_urls = params.base_url.split(",")
        discovery = Path(params.base_url_file) if params.base_url_file else None
        if discovery is not None:
            if "base_url" in spec.options:
                raise ConfigError(f"backend spec '{spec}': give base_url or base_url_file, not both", field="base_url_file")
            urls = read_url_file(discovery)
            if urls is None:
                raise ConfigError(
                    f"backend spec '{spec}': base_url_file {discovery} is missing, empty or holds a line that is "
                    "not an http(s) URL",
                    field="base_url_file",
                )
            base_urls = urls
        if "api_key_env" in spec.options and not os.environ.get(params.api_key_env):
            raise ConfigError(
                f"backend spec '{spec}': environment variable {params.api_key_env} (api_key_env) is not set",
                field="api_key_env",
            )
        conflict = params.conflicts()
        if conflict:
            raise ConfigError(f"backend spec '{spec}': {conflict}", field="width")
        register_secret(os.environ.get(params.api_key_env))
        self._roles = _parse_roles(spec, params.roles)
        self.transport = Transport(self.model, params, base_urls, discovery, self.notify)
        self.requests = RequestBuilder(self.model, params, self.transport.host)
        #: Where images are asked for; with image_api=auto, None until the server has been asked
        #: (`preflight` or `settle`). OpenAI's own API draws through its images endpoints only.
        self.image_api: ImageAPI | None = (
            params.image_api if params.image_api != "auto" else ("images" if self.hosted else None)
        )
        #: What the servers answered when asked (pre-flight or settle), for run.json.
        self._reports: list[ServerReport] = []
        #: the roles the servers were asked about, and whether every server was asked
        self._asked: tuple[frozenset[str], bool] | None = None
        self._asking: anyio.Lock | None = None
        #: a run settles the backend before any key is made; used on its own, without `settle`, an
        #: undecided auto keeps to the images endpoints (as before image_api existed)
        self._settled = False
        #: Everything this backend consumed since it started (each reply also carries its own share).
        self.total_usage = Usage(calls=0)

    # -- what the backend is -----------------------------------------------------------------------

    @property
    def base_urls(self) -> list[str]:
        return self.transport.base_urls

    @property
    def base_url(self) -> str:
        return self.transport.base_url

    @property
    def host(self) -> str:
        return self.transport.host

    @property
    def reasoning(self) -> bool:
        return is_reasoning_model(self.model)

    @property
    def hosted(self) -> bool:
        """Whether the calls go to OpenAI's own API (which needs a key and has no chat-drawn images)."""
        return any(urlsplit(url).hostname == OPENAI_API_HOST for url in self.base_urls)

    def fills(self) -> frozenset[str]:
        return self._roles

    def identity(self) -> dict[str, Any]:
        params = {k: v for k, v in self.spec.params if k not in self.operational_params and k not in IMAGE_REQUEST_PARAMS}
        if self.params.extra_body:  # by content: two spellings of the same JSON are the same request
            params["extra_body"] = json.dumps(self.params.extra, sort_keys=True, separators=(",", ":"))
        if len(self.base_urls) > 1 or self.transport.discovery is not None:  # replicas of one served model: the answers are the model's
            return {"provider": self.provider, "name": self.model, "params": params}
        return {"provider": self.provider, "name": self.model, "endpoint": _endpoint(self.base_url), "params": params}

    def identity_for(self, role: str | None) -> dict[str, Any]:
        """Image nodes add how their images are asked for: the API (absent for the images endpoints,
        as before image_api existed, so those keys stay) and every per-request field the spec sets."""
        base = self.identity()
        if role not in (GENERATE, EDIT):
            return base
        request: dict[str, Any] = {}
        api = self.image_api or ("auto, not yet decided" if self._settled else "images")  # what `_image_api` does
        if api != "images":
            request["api"] = api
        request.update(self.params.image_request_identity())
        return {**base, "image_request": request} if request else base

    @property
    def concurrency(self) -> int:
        """Calls in flight across the fleet: the spec's ``concurrency``, else servers x ``per_endpoint``
        (servers x the default when no per-server cap is set)."""
        if "concurrency" in self.spec.options:
            return super().concurrency
        return len(self.base_urls) * (self.params.per_endpoint or self.default_concurrency)

    def servers(self) -> list[str]:
        return self.transport.servers()

    @property
    def pooled(self) -> bool:
        """A fleet sized by ``per_endpoint`` keeps its lane under a run-wide ``--concurrency`` (as a
        Ray pool does): that option would otherwise leave its servers idle or overload them."""
        return self.params.per_endpoint is not None

    def __repr__(self) -> str:
        return f"OpenAIBackend(model={self.model!r}, host={self.host!r}, roles={sorted(self._roles)})"

    # -- lifecycle ---------------------------------------------------------------------------------

    async def start(self) -> None:
        self.transport.start(connections=max(self.params.per_endpoint or self.concurrency, 1) * 2)

    async def aclose(self) -> None:
        await self.transport.aclose()

    # -- before a run: pre-flight and settle ---------------------------------------------------------

    async def preflight(self, roles: frozenset[str]) -> list[str]:
        """Ask every server what it offers (`openai_preflight`): one line per problem (no answer, key
        refused, another model served, an images endpoint a bound role needs missing). With
        image_api=auto this is also where the image API is chosen. No request costs a model call."""
        self._refuse_missing_key()
        reports = await self._ask(roles, every_server=True)
        problems = [line for report in reports for line in report.problems]
        if self.image_api == "images":  # a missing images endpoint matters only when images go there
            wanted = {path for role in roles for path in IMAGE_ENDPOINTS_BY_ROLE.get(role, ())}
            for report in reports:
                who = f"openai/{self.model} at {report.server}"
                for path in sorted(p for p in wanted if report.has(p) is False):
                    problems.append(f"{who}: no {path} endpoint (HTTP {report.endpoints[path]}); {ENDPOINT_USERS[path]}")
        return problems

    def provenance(self, role: str) -> RoleProvenance:
        """The model asked for and the id the servers reported serving (with the weights' path a
        vLLM-style card names), the request shape (chat completions, or the images endpoints for
        images), and the sampling fields the spec sets; the protocol's own request settings fill
        in the rest (`umni.run.provenance`)."""
        params = self.params
        images = role in (GENERATE, EDIT)
        if images:
            api = self.image_api or ("images" if not self._settled else "undecided")
            shape = "openai chat completions (image output)" if api == "chat" else f"openai {api} endpoints"
            sampling = Sampling(steps=params.steps, guidance=params.guidance)
            seeds = (
                "the node's seed goes with every request" if api == "chat" or params.image_seed
                else "no seed is sent to the images endpoints (image_seed=false)"
            )
        else:
            shape = "openai chat completions"
            sampling = Sampling(temperature=params.temperature, max_tokens=params.max_tokens)
            seeds = "the node's seed goes with every request (servers may not honour it)"
        reported, weights = _reported(self.model, self._reports)
        return RoleProvenance(
            backend=self.provider,
            model=self.model,
            revision=weights,
            reported_id=reported,
            sampling=sampling,
            seed_policy=seeds,
            http_shape=shape,
        )

    def request_settings(self, role: str) -> frozenset[str]:
        # a reasoning model is sent no node temperature (its API refuses one); the spec's still goes
        return frozenset({"max_tokens"}) if self.reasoning else super().request_settings(role)

    async def settle(self, roles: frozenset[str]) -> dict[str, Any]:
        """Decide image_api=auto before any key is made (one probe, unless the pre-flight asked
        already); returns what the servers reported and the image API chosen, for run.json."""
        self._refuse_missing_key()
        self._settled = True  # from here on only what is decided now counts: keys are made with it
        if self.image_api is None and roles & {GENERATE, EDIT}:
            await self._ask(roles, every_server=False)
        answered = [report.record() for report in self._reports if report.reached]
        if not answered:
            return {}
        record: dict[str, Any] = {"servers": answered}
        if self.params.image_api == "auto" and self.image_api is not None:
            record["image_api"] = f"{self.image_api} (auto)"
        return record

    def _refuse_missing_key(self) -> None:
        """OpenAI's own API answers every call without a key with 401: refuse the spec before any call."""
        if self.hosted and not os.environ.get(self.params.api_key_env):
            raise ConfigError(
                f"backend spec '{self.spec}': OpenAI's API needs a key and {self.params.api_key_env} is not set; "
                f"set the environment variable {self.params.api_key_env} (or api_key_env= another that holds it)",
                field="api_key_env",
            )

    async def _ask(self, roles: frozenset[str], *, every_server: bool) -> list[ServerReport]:
        """Probe the servers (all, or until one answers) once per set of roles; decide image_api=auto
        from the first server that says whether it has images endpoints."""
        if self._asking is None:
            self._asking = anyio.Lock()
        async with self._asking:
            if self._asked is not None and roles <= self._asked[0] and (self._asked[1] or not every_server):
                return self._reports
            image_roles = roles & {GENERATE, EDIT} if self.params.image_api != "chat" else frozenset()
            paths = sorted({p for role in image_roles for p in IMAGE_ENDPOINTS_BY_ROLE[role]})
            key = os.environ.get(self.params.api_key_env) or None
            reports: list[ServerReport] = []
            for url in self.base_urls:
                report = await probe_server(url, model=self.model, params=self.params, key=key, image_paths=paths)
                reports.append(report)
                if not every_server and report.reached:
                    break
            self._reports, self._asked = reports, (roles | (self._asked[0] if self._asked else frozenset()), every_server)
            if self.image_api is None and paths:
                self.image_api = _decide(reports, paths)
            return reports

    # -- understand / judge ------------------------------------------------------------------------

    async def respond(
        self, parts: Sequence[Part], *, max_tokens: int = 512, seed: int = 0, options: RequestOptions | None = None
    ) -> TextReply:
        body = self.requests.chat(parts, max_tokens=self.params.max_tokens or max_tokens, seed=seed, options=options)
        data, _ = await self.transport.post_json("/chat/completions", json_body=body)
        text = message_text(data)
        usage = self._record(chat_usage(data, images_in=count_images(parts)))
        return TextReply(text=text, usage=usage)

    async def choose(self, parts: Sequence[Part], options: Sequence[str], *, seed: int = 0) -> ChoiceReply:
        if not options:
            raise ConfigError("choose() needs at least one option")
        prompt = [*parts, options_block(options)]
        if self.params.mode == "likelihood":
            return await self._choose_by_likelihood(prompt, options, seed=seed)
        body = self.requests.chat(prompt, max_tokens=self.params.max_tokens or 16, seed=seed)
        data, _ = await self.transport.post_json("/chat/completions", json_body=body)
        text = message_text(data)
        usage = self._record(chat_usage(data, images_in=count_images(parts)))
        return ChoiceReply(index=parse_option_letter(text, options), text=text, mode="letter", usage=usage)

    async def _choose_by_likelihood(self, prompt: list[Part], options: Sequence[str], *, seed: int) -> ChoiceReply:
        """Score the option letters by the log-probability of the first answer token: the best-scoring
        valid letter wins; no letter among the alternatives means no choice (None)."""
        data, _ = await self.transport.post_json("/chat/completions", json_body=self.requests.likelihood(prompt, seed=seed))
        letters = {option_letter(i): i for i in range(len(options))}
        best: tuple[float, int] | None = None
        for candidate in top_logprobs(data):
            index = letters.get(str(candidate.get("token", "")).strip().strip("().").upper())
            logprob = candidate.get("logprob")
            if index is not None and isinstance(logprob, (int, float)) and (best is None or logprob > best[0]):
                best = (float(logprob), index)
        usage = self._record(chat_usage(data, images_in=count_images(prompt)))
        text = message_text(data, allow_empty=True)
        return ChoiceReply(index=best[1] if best else None, text=text, mode="likelihood", usage=usage)

    # -- generate / edit ---------------------------------------------------------------------------

    async def generate(self, parts: Sequence[Part], *, seed: int = 0) -> ImageReply:
        """Text-to-image. Through chat, the interleaved prompt goes as it is; through the images
        endpoints, text parts are joined in order into the one prompt string they take, and a
        prompt that carries images goes to the edits endpoint with them."""
        images = [p for p in parts if isinstance(p, Image.Image)]
        if self._image_api() == "chat":
            return await self._draw_through_chat(parts, seed=seed, images_in=len(images))
        prompt = "\n".join(p for p in parts if isinstance(p, str))
        if images:
            return await self.edit(images, prompt, seed=seed)
        body = self.requests.image_generation(prompt, seed=seed)
        data, server = await self.transport.post_json("/images/generations", json_body=body)
        image = await self._image(data, server)
        usage = self._record(image_usage(data, images_in=0))
        return ImageReply(image=image, usage=usage)

    async def edit(self, images: Sequence[Image.Image], instruction: str, *, seed: int = 0) -> ImageReply:
        """Through chat, the instruction then the input images as one user message; through the
        images endpoints, a multipart form with the images as files (or JSON, `edit_form=json`)."""
        if not images:
            raise ConfigError("edit() needs at least one input image")
        if self._image_api() == "chat":
            return await self._draw_through_chat([instruction, *images], seed=seed, images_in=len(images))
        if self.params.edit_form == "json":
            body = self.requests.image_edit_json(images, instruction, seed=seed)
            data, server = await self.transport.post_json("/images/edits", json_body=body)
        else:
            form, files = self.requests.image_edit(images, instruction, seed=seed)
            data, server = await self.transport.post_json("/images/edits", data=form, files=files)
        image = await self._image(data, server)
        usage = self._record(image_usage(data, images_in=len(images)))
        return ImageReply(image=image, usage=usage)

    async def _draw_through_chat(self, parts: Sequence[Part], *, seed: int, images_in: int) -> ImageReply:
        data, server = await self.transport.post_json("/chat/completions", json_body=self.requests.chat_image(parts, seed=seed))
        image = await self._image(data, server, through_chat=True)
        usage = chat_usage(data, images_in=images_in)
        usage.images_out = 1
        return ImageReply(image=image, usage=self._record(usage))

    def _image_api(self) -> ImageAPI:
        if self.image_api is None and not self._settled:
            return "images"
        if self.image_api is None:
            raise BackendError(
                f"{self.transport.who()}: image_api=auto could not tell before the run whether the server draws "
                "through chat or through its images endpoints (it did not answer); set image_api=chat or image_api=images",
                retryable=False,
            )
        return self.image_api

    async def _image(self, data: Any, server: str, *, through_chat: bool = False) -> Image.Image:
        """The reply's image, decoded under the pixel cap: from the reply itself, or fetched from
        the server that made it (any other host gets no key)."""
        who = self.transport.who()
        found = chat_image(data, who) if through_chat else first_image(data, who)
        if isinstance(found, ImageBytes):
            raw, source = found.raw, f"{self.model} at {self.host}" + (f" ({found.via})" if found.via else "")
        else:
            raw, source = await self.transport.fetch_image(found.url, server), f"{self.model} at {self.host}"
        return decode_image(raw, source=source, max_pixels=self.params.max_pixels)

    def _record(self, usage: Usage) -> Usage:
        self.total_usage.add(usage)
        return usage


def _decide(reports: list[ServerReport], paths: list[str]) -> ImageAPI | None:
    """image_api=auto: the images endpoints when a server has any that the bound roles call, chat
    when one answered that it has none of them, undecided when none answered."""
    for report in reports:
        answered = [has for has in (report.has(p) for p in paths) if has is not None]
        if any(answered):
            return "images"
        if answered and len(answered) == len(paths):
            return "chat"
    return None


def _endpoint(base_url: str) -> str:
    """The base URL as identity: scheme, host, port (the scheme's default when absent) and path.
    Two servers on one host differ by port or path, so they never share cache entries. Userinfo
    (credentials) is left out: it is not identity, and identity is written to run.json."""
    parts = urlsplit(base_url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.scheme}://{(parts.hostname or '').lower()}:{port}{parts.path.rstrip('/')}"


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


__all__ = [
    "OpenAIBackend",
    "OpenAIParams",
    "is_reasoning_model",
    "chat_content",
    "parse_option_letter",
    "parse_retry_after",
    "decode_image",
]


def _reported(model: str, reports: Sequence[ServerReport]) -> tuple[str | None, str | None]:
    """The id the servers reported for `model` and the weights' path its card names (vLLM's
    ``root``, where it differs from the id); every id they listed when none is `model`; None
    for what no server said."""
    listed = [entry for report in reports if report.reached for entry in report.models]
    for entry in listed:
        if entry.get("id") == model:
            root = entry.get("root")
            return model, root if root and root != model else None
    return (", ".join(dict.fromkeys(str(entry.get("id")) for entry in listed)) or None), None
