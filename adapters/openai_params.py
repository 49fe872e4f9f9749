"""The openai/ spec's parameters as one typed object, and the rules that follow from them alone.

Every part of the backend (request building, transport, reply reading) reads the same validated
`OpenAIParams` instead of copies of its fields, so a parameter has one spelling, one default and one
place where it is checked. Which parameters enter the identity is decided here too (`operational`):
a parameter that only changes how the server is reached or how much umni will read changes no answer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar, Literal
from urllib.parse import urlsplit

from pydantic import Field, Json, PositiveFloat, PositiveInt, field_validator

from umni.plugin import BackendParams

from .endpoints import DEFAULT_COOL_OFF_S
from .http_limits import DEFAULT_MAX_PIXELS, DEFAULT_MAX_RESPONSE_BYTES

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
#: Bounds on what a server can make umni read and decode (see http_limits); they change no answer.
LIMIT_PARAMS = frozenset({"max_response_bytes", "max_pixels"})
#: The image parameters of the Images API, sent only when the spec names them.
IMAGE_OPTIONS = ("size", "quality", "response_format", "style")
#: Parameters that change only how images are asked for: they enter the identity of image nodes
#: (generate, edit) and of no other, so changing one recomputes the images and nothing else.
IMAGE_REQUEST_PARAMS = ("image_api", "width", "height", "steps", "guidance", "negative_prompt", "image_seed", "edit_form")
#: `size` as width x height, the form the diffusion servers' `width`/`height` fields come from.
SIZE = re.compile(r"^(\d+)x(\d+)$")


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
    #: where generate and edit ask for images: chat completions with image output (vLLM-Omni's shape),
    #: the images endpoints, or (auto) whichever the server offers, decided before the run
    image_api: Literal["auto", "chat", "images"] = "auto"
    #: per-request diffusion fields of the servers that take them (vLLM-Omni, SGLang), sent only when set
    width: PositiveInt | None = None
    height: PositiveInt | None = None
    steps: PositiveInt | None = None
    guidance: float | None = Field(None, ge=0, allow_inf_nan=False)
    negative_prompt: str | None = None
    #: send the node's seed to the images endpoints too (chat requests always carry it)
    image_seed: bool = False
    #: how an edit hands over its input images: multipart files, or JSON with data-URL image references
    edit_form: Literal["multipart", "json"] = "multipart"

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

    def conflicts(self) -> str | None:
        """Settings that contradict each other, worded for the user (None: none)."""
        if (self.width is None) != (self.height is None):
            return "width and height go together: give both, or size=WIDTHxHEIGHT"
        if self.width is not None and self.size is not None:
            return "give size=WIDTHxHEIGHT or width= and height=, not both"
        return None

    # -- what follows from the parameters ----------------------------------------------------------

    @property
    def timeout_s(self) -> float:
        """Seconds one attempt may take, every byte read included."""
        return self.timeout or DEFAULT_TIMEOUT_S

    @property
    def connect_timeout_s(self) -> float:
        return self.connect_timeout or min(self.timeout_s, MAX_CONNECT_TIMEOUT_S)

    @property
    def extra(self) -> dict[str, Any]:
        """The spec's extra body fields (none: an empty object)."""
        return dict(self.extra_body or {})

    @property
    def image_options(self) -> dict[str, Any]:
        """The Images API parameters the spec names, in a fixed order."""
        return {k: getattr(self, k) for k in IMAGE_OPTIONS if getattr(self, k) is not None}

    @property
    def dimensions(self) -> tuple[int, int] | None:
        """(width, height) asked for: from width= and height=, or from a size of the form WIDTHxHEIGHT."""
        if self.width is not None and self.height is not None:
            return self.width, self.height
        match = SIZE.match(self.size or "")
        return (int(match.group(1)), int(match.group(2))) if match else None

    @property
    def diffusion_fields(self) -> dict[str, Any]:
        """The diffusion servers' per-request fields the spec sets (vLLM-Omni and SGLang spell them so)."""
        named = {"num_inference_steps": self.steps, "guidance_scale": self.guidance, "negative_prompt": self.negative_prompt}
        return {k: v for k, v in named.items() if v is not None}

    def image_request_identity(self) -> dict[str, Any]:
        """The image request parameters set to something other than their default (image_api apart:
        what it resolved to is the backend's to say)."""
        defaults = type(self).model_fields
        return {
            name: getattr(self, name)
            for name in IMAGE_REQUEST_PARAMS
            if name != "image_api" and getattr(self, name) != defaults[name].default
        }

    def token_field_for(self, model: str) -> str:
        """The request field that carries the reply-length limit for `model`."""
        if self.token_field == "auto":
            return "max_completion_tokens" if is_reasoning_model(model) else "max_tokens"
        return self.token_field


def check_extra_body(body: Mapping[str, Any], where: str) -> None:
    """Refuse extra fields that would overwrite what umni builds itself."""
    taken = sorted(set(body) & RESERVED_FIELDS)
    if taken:
        raise ValueError(f"{where} may not set {', '.join(taken)}: umni sets those (use the spec parameter)")
