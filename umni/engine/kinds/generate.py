"""``generate``: an image from an interleaved prompt (text, maybe images and other outputs)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from umni.backends import roles as R
from umni.engine.kinds import register
from umni.engine.kinds.base import Kind, KindContext
from umni.graph.graph import OutputType


class ImageOutput(BaseModel):
    """A stored image (its ImageRef fields) and what the call consumed; ``notes`` (the backend's
    "kind: detail" lines) is present only when the backend gave some, so other outputs keep their shape."""

    model_config = ConfigDict(extra="allow")

    image: dict[str, Any]
    usage: dict[str, Any]

    @classmethod
    def of(cls, ref: Any, reply: R.ImageReply) -> ImageOutput:
        extra = {"notes": list(reply.notes)} if reply.notes else {}
        return cls(image=ref.model_dump(), usage=asdict(reply.usage), **extra)


class Generate(Kind):
    name = "generate"
    default_role = R.GENERATE
    output: ClassVar[OutputType] = "image"
    Output = ImageOutput

    async def execute(self, ctx: KindContext) -> ImageOutput:
        parts = ctx.parts()
        backend = ctx.backend
        reply = await ctx.call(lambda: backend.generate(parts, seed=ctx.seed()))
        ref = await ctx.store_image(reply.image, png=reply.png)
        return ImageOutput.of(ref, reply)


register(Generate())
