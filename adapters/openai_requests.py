"""Building the openai/ backend's requests: the exact bodies sent for each role, from the parameters.

Only fields every compatible server understands are sent, and optional ones only when the spec
names them, so the server's own default applies otherwise and the identity says exactly what was
asked for. Building is pure (no I/O), so what is sent can be read and tested apart from sending it.
"""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from PIL import Image

from umni.plugin import ConfigError, Part, RequestOptions, option_letter

from .openai_params import OPENAI_API_HOST, SELF_HOSTED_FIELDS, OpenAIParams, check_extra_body, is_reasoning_model

#: One multipart file: (form field, (file name, bytes, media type)).
FormFile = tuple[str, tuple[str, bytes, str]]


@dataclass(frozen=True)
class RequestBuilder:
    """The request bodies of one model on one server (`host` decides what OpenAI's own API refuses)."""

    model: str
    params: OpenAIParams
    host: str

    @property
    def reasoning(self) -> bool:
        return is_reasoning_model(self.model)

    def chat(
        self, parts: Sequence[Part], *, max_tokens: int, seed: int, options: RequestOptions | None = None
    ) -> dict[str, Any]:
        """The chat request: the node's system message first, the limit in the model's token field,
        sampling the spec names (or, for a model that takes it, the node's temperature), then the
        extra body fields (the node's, overridden by the spec's)."""
        messages: list[dict[str, Any]] = []
        if options is not None and options.system:
            messages.append({"role": "system", "content": options.system})
        messages.append({"role": "user", "content": chat_content(parts)})
        token_field = self.params.token_field_for(self.model)
        body: dict[str, Any] = {"model": self.model, "messages": messages, token_field: max_tokens, "seed": seed}
        temperature = self.params.temperature
        if temperature is None and options is not None and not self.reasoning:
            temperature = options.temperature
        if temperature is not None:
            body["temperature"] = temperature
        if self.params.top_p is not None:
            body["top_p"] = self.params.top_p
        extra: dict[str, Any] = {}
        if options is not None and options.extra_body:
            try:
                check_extra_body(options.extra_body, "a node's extra_body")
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
            extra = merged(extra, options.extra_body)
            if self.host == OPENAI_API_HOST:
                extra = {k: v for k, v in extra.items() if k not in SELF_HOSTED_FIELDS}
        extra = merged(extra, self.params.extra)
        body.update(extra)
        return body

    def likelihood(self, parts: Sequence[Part], *, seed: int) -> dict[str, Any]:
        """One answer token with its top alternatives (vLLM, SGLang and OpenAI all return them)."""
        body = self.chat(parts, max_tokens=1, seed=seed)
        body["logprobs"] = True
        body["top_logprobs"] = 20
        return body

    def image_generation(self, prompt: str) -> dict[str, Any]:
        """The Images API's generation body. The seed is not sent: hosted image APIs reject it."""
        return {"model": self.model, "prompt": prompt, "n": 1, **self.params.image_options, **self.params.extra}

    def image_edit(self, images: Sequence[Image.Image], instruction: str) -> tuple[dict[str, str], list[FormFile]]:
        """The Images API's edit form and files: one ``image``, or several as ``image[]``."""
        field = "image" if len(images) == 1 else "image[]"
        files = [(field, (f"image_{i}.png", png_bytes(img), "image/png")) for i, img in enumerate(images)]
        # The edits endpoint takes no `style` (a generation option); sending it is an error on OpenAI's API.
        options = {k: v for k, v in self.params.image_options.items() if k != "style"}
        form = {"model": self.model, "prompt": instruction, "n": "1", **options, **form_fields(self.params.extra)}
        return form, files


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


def options_block(options: Sequence[str]) -> str:
    """The options of a multiple-choice question as ``A. text`` lines and the instruction to answer."""
    lines = [f"{option_letter(i)}. {text}" for i, text in enumerate(options)]
    last = option_letter(len(options) - 1)
    return "\n\nOptions:\n" + "\n".join(lines) + f"\n\nReply with the letter of the correct option (A-{last}) only."


def count_images(parts: Sequence[Part]) -> int:
    return sum(isinstance(p, Image.Image) for p in parts)


def merged(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """`base` with `over` laid on top; nested objects are merged key by key, `over` winning."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out


def form_fields(extra: Mapping[str, Any]) -> dict[str, str]:
    """Extra body fields as multipart form fields (image edits): scalars only, JSON-spelled."""
    fields = {}
    for key, value in extra.items():
        if isinstance(value, (dict, list)):
            raise ConfigError(
                f"extra_body field '{key}' is an object or a list; image edits (a form) take only scalar fields"
            )
        fields[key] = value if isinstance(value, str) else json.dumps(value)
    return fields
