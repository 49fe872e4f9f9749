"""Reading the openai/ backend's replies: text, refusals, token counts, option log-probabilities, images.

A server's reply is not trusted: a refusal is raised as `Refusal` (never parsed as an answer), a
count the server did not send is unknown (None), never 0, and an image is taken from the reply
itself (base64, a ``data:`` URL) under the backend's size and pixel caps or named by a URL that
the transport fetches under the same caps. Every problem is one typed error naming what came back.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote_to_bytes, urlsplit

from PIL import Image

from umni.plugin import BackendError, ParseFailure, Refusal, Usage, parse_choice, scrub, truncate

from .http_limits import DEFAULT_MAX_PIXELS, decode_image_bounded

#: The engine's one multiple-choice reading (umni.choices); kept under this name for callers.
parse_option_letter = parse_choice


def malformed(who: str, what: str) -> BackendError:
    # A garbled body is usually a proxy or an overloaded server mid-restart: worth another try.
    return BackendError(f"{who}: malformed response: {what}", retryable=True)


def message_text(data: Any, *, allow_empty: bool = False) -> str:
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


def top_logprobs(data: Any) -> list[dict[str, Any]]:
    """The first answer token and its alternatives, each ``{"token", "logprob"}``."""
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


def chat_usage(data: Any, *, images_in: int) -> Usage:
    """Tokens as the server counted them; a count it did not send is unknown (None), never 0."""
    usage = data.get("usage") if isinstance(data, dict) else None
    usage = usage if isinstance(usage, dict) else {}
    return Usage(
        calls=1,
        input_tokens=count(usage.get("prompt_tokens", usage.get("input_tokens"))),
        output_tokens=count(usage.get("completion_tokens", usage.get("output_tokens"))),
        images_in=images_in,
    )


def image_usage(data: Any, *, images_in: int) -> Usage:
    usage = chat_usage(data, images_in=images_in)
    usage.images_out = 1
    return usage


def count(value: Any) -> int | None:
    """A token count from the response, or None when the server did not give a usable one."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value)


@dataclass(frozen=True)
class ImageBytes:
    """An image carried inside the reply (base64 or a ``data:`` URL): its bytes, not yet decoded."""

    raw: bytes
    #: where the bytes came from, for messages ("a data: URL")
    via: str = ""


@dataclass(frozen=True)
class ImageLink:
    """An image the reply names by an http(s) URL (or a path on the server): to be fetched."""

    url: str


def first_image(data: Any, who: str) -> ImageBytes | ImageLink:
    """Where the first image of an Images API reply (``data[0]``) is: in the reply, or behind a URL."""
    items = data.get("data") if isinstance(data, dict) else None
    first = items[0] if isinstance(items, list) and items and isinstance(items[0], dict) else None
    if first is None:
        raise malformed(who, "the image response has no data[0] entry")
    if first.get("b64_json"):
        try:
            return ImageBytes(base64.b64decode(first["b64_json"], validate=False))
        except (ValueError, TypeError) as exc:
            raise malformed(who, f"data[0].b64_json is not base64 ({exc})") from None
    if first.get("url"):
        return image_at(str(first["url"]).strip(), who, "data[0].url")
    raise malformed(who, "data[0] has neither b64_json nor url")


def chat_image(data: Any, who: str) -> ImageBytes | ImageLink:
    """The first image of a chat completion asked for image output: an ``image_url`` part of any
    choice's ``message.content`` (vLLM-Omni puts the text of a reply in one choice and its image in
    another). A refusal raises `Refusal`; a reply with no image raises `ParseFailure` naming what
    came back, so a server that ignores ``modalities`` and answers in words is a counted failure."""
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices:
        raise malformed(who, "no choices in the chat completion")
    said: list[str] = []
    for number, choice in enumerate(choices):
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            continue
        refusal = message.get("refusal")
        if isinstance(refusal, str) and refusal.strip():
            raise Refusal(f"the model refused: {truncate(scrub(refusal), 300)}", raw=scrub(refusal))
        content = message.get("content")
        if choice.get("finish_reason") == "content_filter":
            text = scrub(content) if isinstance(content, str) else ""
            raise Refusal("the server's content filter stopped the reply (finish_reason content_filter)", raw=text or None)
        if isinstance(content, str):
            said.append(content)
            continue
        for index, part in enumerate(content if isinstance(content, list) else []):
            if not isinstance(part, dict):
                continue
            if part.get("type") == "text" and isinstance(part.get("text"), str):
                said.append(part["text"])
            elif part.get("type") == "image_url":
                where = f"choices[{number}].message.content[{index}].image_url"
                reference = part.get("image_url")
                url = reference.get("url") if isinstance(reference, dict) else reference
                if not isinstance(url, str) or not url.strip():
                    raise malformed(who, f"{where} holds no url")
                return image_at(url.strip(), who, where, media_required=True)
    text = scrub(" ".join(t.strip() for t in said if t.strip()))
    came = f"text only: '{truncate(text, 200)}'" if text else "no content"
    raise ParseFailure(
        f"{who}: an image was asked for (chat with modalities [\"image\"]) and the reply holds {came}; a server that "
        "does not draw through chat ignores modalities (use image_api=images, or bind the role elsewhere)",
        raw=text or None,
    )


def image_at(url: str, who: str, where: str, *, media_required: bool = False) -> ImageBytes | ImageLink:
    """The image a reply's URL holds: read from a ``data:`` URL, or to fetch from an http(s) URL or a
    path on the server; any other scheme is refused without being followed."""
    scheme = urlsplit(url).scheme.lower() if ":" in url else ""
    if scheme == "data":  # the image itself, inside the reply the size cap already bounded
        return ImageBytes(data_url_bytes(url, who, where=where, media_required=media_required), via="a data: URL")
    if scheme not in ("", "http", "https"):
        raise BackendError(
            f"{who}: {where} has the scheme '{truncate(scheme, 20)}'; an image is fetched from an "
            "http(s) URL or read from a data: URL",
            retryable=False,
        )
    return ImageLink(url)


def data_url_bytes(url: str, who: str, *, where: str = "data[0].url", media_required: bool = False) -> bytes:
    """The bytes a ``data:[<media type>][;base64],<data>`` URL carries (RFC 2397), read here: it is
    never a path to fetch. A declared media type other than an image is refused by name (so is an
    undeclared one, where the reply's format promises a type)."""
    header, comma, payload = url[len("data:") :].partition(",")
    if not comma:
        raise malformed(who, f"{where} is a data: URL with no comma before its data")
    fields = [f.strip().lower() for f in header.split(";")]
    media = fields[0]
    untyped = not media or media == "application/octet-stream"
    if (untyped and media_required) or (not untyped and not media.startswith("image/")):
        raise BackendError(f"{who}: {where} is a data: URL of {truncate(media or 'no media type', 60)}, not an image", retryable=False)
    if "base64" in fields[1:]:
        try:
            return base64.b64decode("".join(payload.split()), validate=True)
        except (ValueError, TypeError) as exc:
            raise malformed(who, f"{where} is a data: URL whose base64 does not decode ({exc})") from None
    return unquote_to_bytes(payload)


def decode_image(raw: bytes, *, source: str, max_pixels: int = DEFAULT_MAX_PIXELS) -> Image.Image:
    """Decode fully now, so a truncated download fails here (retryable), not later in scoring; an
    image over `max_pixels` is refused from its header, before its pixels are decoded."""
    return decode_image_bounded(raw, max_pixels=max_pixels, source=source)
