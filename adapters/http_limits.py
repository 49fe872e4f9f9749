"""Bounds on what an HTTP model server can make umni do: bytes read, pixels decoded, time spent.

A server is not trusted to be small or quick. One response is read as a stream and given up past
`max_bytes` (a 1 GiB chunked body is never buffered); one attempt — connecting, sending, waiting and
reading every byte — ends at its deadline however slowly the bytes trickle; a returned image is
measured from its header before any pixel is decoded, and refused past `max_pixels` (a 27 KB PNG
can declare 13000 x 13000 px). Each refusal is one typed `BackendError`.
"""

from __future__ import annotations

import io
import json
import math
import warnings
from typing import Any

import anyio
import httpx
from PIL import Image

from umni.plugin import BackendError

#: Largest response body read, in bytes (a 4096 x 4096 PNG as base64 JSON is about 60 MiB).
DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024
#: Largest image decoded from a response, in pixels (width x height).
DEFAULT_MAX_PIXELS = 8192 * 8192

#: Headers that describe the body as sent; the body handed on is already decoded and complete.
_BODY_HEADERS = ("content-encoding", "content-length", "transfer-encoding")


async def send_bounded(client: httpx.AsyncClient, request: httpx.Request, *, max_bytes: int, deadline_s: float, who: str) -> httpx.Response:
    """Send `request` and read its whole body within `deadline_s` seconds and `max_bytes` bytes.

    Returns a complete response (its `.content` set). httpx's own timeouts still apply to each
    read; this deadline bounds their sum. Raises BackendError: retryable when the deadline passed
    (a slow server may recover), not retryable when the body is too large (it would be again).
    """
    try:
        with anyio.fail_after(deadline_s):
            response = await client.send(request, stream=True)
            try:
                declared = response.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > max_bytes:
                    raise _too_large(who, f"declares {int(declared)} bytes")
                chunks: list[bytes] = []
                size = 0
                async for chunk in response.aiter_bytes():  # decoded: a gzip bomb is counted as it inflates
                    size += len(chunk)
                    if size > max_bytes:
                        raise _too_large(who, f"passed {max_bytes} bytes and was cut off")
                    chunks.append(chunk)
            finally:
                await response.aclose()
    except TimeoutError:
        raise BackendError(
            f"{who}: no complete response within the timeout ({deadline_s:g} s for the whole attempt)", retryable=True
        ) from None
    headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in _BODY_HEADERS]
    return httpx.Response(response.status_code, headers=headers, content=b"".join(chunks), request=request)


def _too_large(who: str, detail: str) -> BackendError:
    return BackendError(f"{who}: the response is too large ({detail}; max_response_bytes)", retryable=False)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:20]} is out of range")
    return value


def strict_json(data: bytes) -> Any:
    """Parse a response body as standard JSON: NaN, Infinity and numbers beyond float range are
    refused (Python's json accepts them), so a usage count can never come back infinite."""
    return json.loads(data, parse_constant=_reject_constant, parse_float=_finite_float)


def decode_image_bounded(raw: bytes, *, max_pixels: int, source: str) -> Image.Image:
    """Decode an image from a response, refusing one larger than `max_pixels` before decoding it.

    An image too large is not retryable (the server would send it again); bytes that do not decode
    are (a truncated download). Messages name the data by size, never by a Python object repr.
    """
    try:
        with warnings.catch_warnings():  # the size is checked below, against our own cap
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(raw))
        width, height = image.size
    except Image.DecompressionBombError as exc:
        raise BackendError(f"{source}: the returned image is a decompression bomb ({exc})", retryable=False) from None
    except Exception as exc:  # UnidentifiedImageError and friends
        raise BackendError(
            f"{source}: the returned image does not decode: not an image ({len(raw)} bytes; {type(exc).__name__})",
            retryable=True,
        ) from None
    if width * height > max_pixels:
        raise BackendError(
            f"{source}: the returned image is {width}x{height} px, over the limit of {max_pixels} px (max_pixels)",
            retryable=False,
        )
    try:
        image.load()
    except Exception as exc:  # truncated or corrupt pixel data
        raise BackendError(
            f"{source}: the returned image does not decode ({len(raw)} bytes; {type(exc).__name__}: {exc})", retryable=True
        ) from None
    return image.convert("RGB") if image.mode not in ("RGB", "RGBA", "L") else image
