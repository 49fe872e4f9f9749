"""The ``tinydraw`` backend: spec ``tinydraw/<checkpoint directory>?size=64``.

What each part of the plugin contract does here:

- ``Params`` declares the spec's parameters (pydantic): a wrong or unknown one fails when the spec
  is read, naming the parameter, before any model loads.
- The constructor checks the checkpoint exists (cheap) and fingerprints it; ``start()`` loads the
  weights once, in a worker thread, so the event loop keeps running other nodes meanwhile.
- ``identity()`` holds everything that changes outputs (the weights' hash, output-affecting
  parameters): the cache keys on it, so new weights are never answered from old results.
- Role methods are async and return ``umni.roles`` replies; blocking work runs in a thread.
  ``ConfigError`` means the user must change something; ``BackendError(retryable=...)`` says
  whether trying the call again could help.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import anyio.to_thread
import numpy as np
from PIL import Image
from pydantic import PositiveInt

from umni.plugin import EDIT, GENERATE, Backend, BackendError, BackendParams, ConfigError, ImageReply, Part, Spec, Usage


class TinyDrawParams(BackendParams):
    """Spec parameters; ``size`` changes outputs, the inherited engine ones do not."""

    size: PositiveInt = 64


class TinyDrawBackend(Backend):
    """Draws and edits with a TinyDraw checkpoint loaded from its own code."""

    provider: ClassVar[str] = "tinydraw"
    roles: ClassVar[frozenset[str]] = frozenset({GENERATE, EDIT})
    Params = TinyDrawParams

    def __init__(self, spec: Spec) -> None:
        super().__init__(spec)
        self.directory = Path(spec.name).expanduser()
        if not (self.directory / "config.json").is_file():
            raise ConfigError(
                f"backend spec '{spec}': no TinyDraw checkpoint at '{self.directory}' "
                "(write one with `python -m umni_tinydraw.model DIR`)"
            )
        self.fingerprint = hashlib.sha256(
            (self.directory / "config.json").read_bytes() + (self.directory / "weights.pt").read_bytes()
        ).hexdigest()
        self._model: Any = None

    async def start(self) -> None:
        from .model import TinyDraw

        try:
            self._model = await anyio.to_thread.run_sync(TinyDraw.load, self.directory)
        except (OSError, ValueError, RuntimeError) as exc:
            raise ConfigError(f"backend spec '{self.spec}': cannot load TinyDraw: {exc}") from exc

    def identity(self) -> dict[str, Any]:
        return {"provider": self.provider, "model_version": self.fingerprint, "size": self.params.size}

    async def generate(self, parts: Sequence[Part], *, seed: int = 0) -> ImageReply:
        prompt = " ".join(part for part in parts if isinstance(part, str))
        side = self.params.size
        image = await anyio.to_thread.run_sync(self._draw, prompt, (side, side), seed, None)
        return ImageReply(image, Usage(calls=1, images_out=1))

    async def edit(self, images: Sequence[Image.Image], instruction: str, *, seed: int = 0) -> ImageReply:
        if not images:
            raise BackendError("tinydraw: edit called without an input image", retryable=False)
        source = images[0].convert("RGB")
        image = await anyio.to_thread.run_sync(self._draw, instruction, source.size, seed, source)
        return ImageReply(image, Usage(calls=1, images_in=1, images_out=1))

    def _draw(self, prompt: str, size: tuple[int, int], seed: int, source: Image.Image | None) -> Image.Image:
        import torch

        if self._model is None:
            raise RuntimeError(f"backend {self.spec} used before start()")
        tensor = None
        if source is not None:
            tensor = torch.from_numpy(np.asarray(source, dtype=np.float32) / 255).permute(2, 0, 1)
        with torch.inference_mode():
            out = self._model(prompt, size, torch.Generator().manual_seed(seed), tensor)
        pixels = (out.permute(1, 2, 0).numpy() * 255).round().astype(np.uint8)
        return Image.fromarray(pixels)
