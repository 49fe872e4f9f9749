"""``generate``: an image from an interleaved prompt (text, maybe images and other outputs)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, ClassVar

from pydantic import BaseModel

from .. import roles as R
from ..graph import OutputType
from . import register
from .base import Kind, KindContext


class ImageOutput(BaseModel):
    """A stored image (its ImageRef fields) and what the call consumed."""

    image: dict[str, Any]
    usage: dict[str, Any]


class Generate(Kind):
    name = "generate"
    default_role = R.GENERATE
    output: ClassVar[OutputType] = "image"
    Output = ImageOutput

    async def execute(self, ctx: KindContext) -> ImageOutput:
        parts = ctx.parts()
        backend = ctx.backend
        reply = await ctx.call(lambda: backend.generate(parts, seed=ctx.seed()))
        ref = await ctx.store_image(reply.image)
        return ImageOutput(image=ref.model_dump(), usage=asdict(reply.usage))


register(Generate())
