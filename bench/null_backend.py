"""A zero-latency backend that does (almost) nothing, so a benchmark measures the engine around it.

It is not registered as an entry point: benchmarks bind it directly with `Bindings({...})`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from PIL import Image

from umni.backends.contract import Backend
from umni.backends.roles import EDIT, GENERATE, JUDGE, UNDERSTAND, ChoiceReply, ImageReply, Part, TextReply, Usage
from umni.util.spec import Spec


class NullBackend(Backend):
    """Answers at once: option 0, a fixed text, and images made by copying one stored picture.

    Each image differs from the last in one pixel, so every generate/edit result is a new blob (as a
    model's would be) while making it costs only a copy. ``image_side`` sets the picture's size; the
    picture is a gradient with mild noise, which compresses about as well as a photograph.
    """

    provider: ClassVar[str] = "bench-null"
    roles: ClassVar[frozenset[str]] = frozenset({UNDERSTAND, GENERATE, EDIT, JUDGE})
    default_concurrency: ClassVar[int] = 16

    def __init__(self, spec: Spec | None = None, *, image_side: int = 8) -> None:
        super().__init__(spec or Spec.parse("bench-null/zero"))
        self.base_image = _picture(image_side)
        self.calls = 0

    def _image(self) -> Image.Image:
        image = self.base_image.copy()
        n = self.calls
        image.putpixel((0, 0), (n % 256, (n // 256) % 256, (n // 65536) % 256))
        return image

    async def choose(self, parts: Sequence[Part], options: Sequence[str], *, seed: int = 0) -> ChoiceReply:
        self.calls += 1
        return ChoiceReply(index=0, text=options[0], mode="letter", usage=Usage(input_tokens=1, output_tokens=1))

    async def respond(self, parts: Sequence[Part], *, max_tokens: int = 512, seed: int = 0) -> TextReply:
        self.calls += 1
        return TextReply(text="ok", usage=Usage(input_tokens=1, output_tokens=1))

    async def generate(self, parts: Sequence[Part], *, seed: int = 0) -> ImageReply:
        self.calls += 1
        return ImageReply(image=self._image(), usage=Usage(images_out=1))

    async def edit(self, images: Sequence[Image.Image], instruction: str, *, seed: int = 0) -> ImageReply:
        self.calls += 1
        return ImageReply(image=self._image(), usage=Usage(images_in=len(images), images_out=1))


def _picture(side: int) -> Image.Image:
    rng = np.random.default_rng(side)
    ramp = np.linspace(0, 255, side, dtype=np.float32)
    pixels = np.stack([np.add.outer(ramp, ramp) / 2, np.tile(ramp, (side, 1)), np.tile(ramp[:, None], (1, side))], axis=-1)
    pixels += rng.normal(0, 6, pixels.shape)
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8), "RGB")
