"""What crosses to and from a Ray replica: images as PNG bytes, never pickled PIL objects.

A pickled ``PIL.Image`` ties both sides to one Pillow version and carries whatever private state the
image object has; PNG bytes are a stable, versionless encoding. Call arguments (edit inputs, images
inside prompts) and replies (generated images) are walked, and every image is swapped for a
`WireImage` on the way out and back for an image on the way in. Images go with their mode, size and
text ``info`` entries (the sim backend, for one, reads its scene from ``info``). An image a
generate/edit call returns is encoded exactly as the store encodes it (`umni.store.images.encode_png`)
and the driver's `ImageReply` keeps those bytes, so they are stored as they are.
"""

from __future__ import annotations

import dataclasses
import io
from dataclasses import dataclass
from typing import Any

from PIL import Image, PngImagePlugin

from umni.backends.roles import ImageReply
from umni.store.images import encode_png

#: Modes PNG stores as they are; an image in another mode crosses as its raw pixel buffer.
_PNG_MODES = frozenset({"1", "L", "LA", "I", "I;16", "P", "RGB", "RGBA"})


@dataclass(frozen=True)
class WireImage:
    """One image as bytes: PNG (``raw`` False) or, for a mode PNG cannot hold, the raw pixel buffer."""

    data: bytes
    mode: str
    size: tuple[int, int]
    raw: bool = False
    info: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, image: Image.Image) -> WireImage:
        texts = tuple(sorted((k, v) for k, v in image.info.items() if isinstance(k, str) and isinstance(v, str)))
        if image.mode not in _PNG_MODES:
            return cls(image.tobytes(), image.mode, image.size, raw=True, info=texts)
        chunks = PngImagePlugin.PngInfo()
        for key, value in texts:
            chunks.add_text(key, value)
        buffer = io.BytesIO()
        image.save(buffer, format="PNG", pnginfo=chunks, compress_level=1)
        return cls(buffer.getvalue(), image.mode, image.size)

    def image(self) -> Image.Image:
        if self.raw:
            image = Image.frombytes(self.mode, self.size, self.data)
            image.info.update(self.info)
            return image
        image = Image.open(io.BytesIO(self.data))
        image.load()
        return image


@dataclass(frozen=True)
class WireReply:
    """An `ImageReply` on its way back: the image in umni's stored PNG encoding."""

    png: bytes
    fields: dict[str, Any]


def to_wire(value: Any) -> Any:
    """`value` with every image (at any depth of lists, tuples, dicts and dataclasses) as bytes."""
    if isinstance(value, Image.Image):
        return WireImage.of(value)
    if isinstance(value, ImageReply):
        rest = {f.name: to_wire(getattr(value, f.name)) for f in dataclasses.fields(value) if f.name not in ("image", "png")}
        return WireReply(value.png if value.png is not None else encode_png(value.image), rest)
    return _walk(value, to_wire)


def from_wire(value: Any) -> Any:
    """The inverse of `to_wire`: images back as `PIL.Image` objects."""
    if isinstance(value, WireImage):
        return value.image()
    if isinstance(value, WireReply):
        fields = {k: from_wire(v) for k, v in value.fields.items()}
        # opened lazily: the store takes the bytes as they are and only reads the size here
        return ImageReply(image=Image.open(io.BytesIO(value.png)), png=value.png, **fields)
    return _walk(value, from_wire)


def _walk(value: Any, convert: Any) -> Any:
    if isinstance(value, list):
        return [convert(v) for v in value]
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(convert(v) for v in value)
    if isinstance(value, dict):
        return {k: convert(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: convert(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}
        if any(changes[name] is not getattr(value, name) for name in changes):
            return dataclasses.replace(value, **changes)
    return value
