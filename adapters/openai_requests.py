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

    def chat_image(self, parts: Sequence[Part], *, seed: int) -> dict[str, Any]:
        """An image asked for through chat completions, as vLLM-Omni serves BAGEL and its kind: the
        interleaved prompt as the user message, ``modalities: ["image"]``, the node's seed and the
        diffusion fields the spec sets as top-level fields (the server reads them there), then the
        spec's extra body fields."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "user", "content": chat_content(parts)}],
            "modalities": ["image"],
            "seed": seed,
        }
        dimensions = self.params.dimensions
        if dimensions is not None:
            body["width"], body["height"] = dimensions
        body.update(self.params.diffusion_fields)
        body.update(self.params.extra)
        return body

    def image_generation(self, prompt: str, *, seed: int) -> dict[str, Any]:
        """The Images API's generation body, with the diffusion servers' fields the spec sets. The
        seed goes only with `image_seed`: OpenAI's hosted image API rejects it."""
        body: dict[str, Any] = {"model": self.model, "prompt": prompt, "n": 1, **self.params.image_options}
        body.update(self._image_extensions(seed))
        body.update(self.params.extra)
        return body

    def image_edit(self, images: Sequence[Image.Image], instruction: str, *, seed: int) -> tuple[dict[str, str], list[FormFile]]:
        """The Images API's edit form and files: one ``image``, or several as ``image[]`` (OpenAI,
        vLLM-Omni and SGLang all read both)."""
        field = "image" if len(images) == 1 else "image[]"
        files = [(field, (f"image_{i}.png", png_bytes(img), "image/png")) for i, img in enumerate(images)]
        extensions = {k: v if isinstance(v, str) else json.dumps(v) for k, v in self._image_extensions(seed).items()}
        form = {"model": self.model, "prompt": instruction, "n": "1", **self._edit_options(), **extensions,
                **form_fields(self.params.extra)}
        return form, files

    def image_edit_json(self, images: Sequence[Image.Image], instruction: str, *, seed: int) -> dict[str, Any]:
        """The edit as JSON (`edit_form=json`), the input images as data-URL references
        (``images: [{"image_url": …}]``), for a server that takes that form instead of files."""
        references = [{"image_url": data_url(png_bytes(img))} for img in images]
        body: dict[str, Any] = {"model": self.model, "prompt": instruction, "n": 1, "images": references, **self._edit_options()}
        body.update(self._image_extensions(seed))
        body.update(self.params.extra)
        return body

    def _edit_options(self) -> dict[str, Any]:
        # The edits endpoint takes no `style` (a generation option); sending it is an error on OpenAI's API.
        return {k: v for k, v in self.params.image_options.items() if k != "style"}

    def _image_extensions(self, seed: int) -> dict[str, Any]:
        """What the images endpoints of vLLM-Omni and SGLang take beyond OpenAI's: the size from
        width= and height= (vLLM-Omni reads only ``size``), the diffusion fields, the seed."""
        out: dict[str, Any] = {}
        if self.params.width is not None and self.params.height is not None:
            out["size"] = f"{self.params.width}x{self.params.height}"
        out.update(self.params.diffusion_fields)
        if self.params.image_seed:
            out["seed"] = seed
        return out


def chat_content(parts: Sequence[Part]) -> list[dict[str, Any]]:
    """Interleaved parts as chat content: text parts and PNG data-URI image parts, in order."""
    content: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, Image.Image):
            content.append({"type": "image_url", "image_url": {"url": data_url(png_bytes(part))}})
        elif isinstance(part, str):
            content.append({"type": "text", "text": part})
        else:
            raise ConfigError(f"a prompt part must be text or a PIL image, got {type(part).__name__}")
    return content


def data_url(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


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
