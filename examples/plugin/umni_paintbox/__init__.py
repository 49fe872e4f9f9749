"""An example umni backend plugin: paints a flat colour named in the prompt.

A real plugin would wrap a model that needs its own code (Bagel, OmniGen2, Ovis-U1 …): load it in
`start()`, run it in a worker thread, and return PIL images. The contract is the same as here:
subclass `umni.backends.Backend`, set `provider` and `roles`, implement the role methods, and
register the class under the `umni.backends` entry-point group in your package metadata.
"""

from __future__ import annotations

from collections.abc import Sequence

import anyio
from PIL import Image

from umni.plugin import EDIT, GENERATE, Backend, ConfigError, ImageReply, Part, Spec, Usage

COLOURS = {"red": (220, 40, 40), "green": (40, 170, 70), "blue": (40, 80, 220), "yellow": (240, 210, 40)}


class PaintboxBackend(Backend):
    """Flat-colour painter (example plugin)."""

    provider = "paintbox"
    roles = frozenset({GENERATE, EDIT})

    def __init__(self, spec: Spec) -> None:
        super().__init__(spec)
        try:
            self.size = int(spec.options.get("size", "64"))
        except ValueError:
            raise ConfigError(f"paintbox: size must be a whole number, got {spec.options['size']!r}") from None

    def _paint(self, text: str) -> Image.Image:
        words = text.lower().split()
        colour = next((COLOURS[w] for w in words if w in COLOURS), (128, 128, 128))
        return Image.new("RGB", (self.size, self.size), colour)

    async def generate(self, parts: Sequence[Part], *, seed: int = 0) -> ImageReply:
        text = " ".join(p for p in parts if isinstance(p, str))
        image = await anyio.to_thread.run_sync(self._paint, text)
        return ImageReply(image, Usage(images_out=1))

    async def edit(self, images: Sequence[Image.Image], instruction: str, *, seed: int = 0) -> ImageReply:
        return ImageReply(self._paint(instruction), Usage(images_in=len(images), images_out=1))
