"""``edit``: an image made by changing the node's input image(s) as its instruction says."""

from __future__ import annotations

from typing import ClassVar

from umni.backends import roles as R
from umni.engine.kinds import register
from umni.engine.kinds.base import Kind, KindContext
from umni.engine.kinds.generate import ImageOutput
from umni.graph.graph import Node, OutputType
from umni.util.errors import ConfigError


class Edit(Kind):
    name = "edit"
    default_role = R.EDIT
    output: ClassVar[OutputType] = "image"
    Output = ImageOutput

    def check(self, node: Node, where: str) -> None:
        super().check(node, where)
        if not node.images:
            raise ConfigError(f"{where}: edit node has no input image")

    async def execute(self, ctx: KindContext) -> ImageOutput:
        images = [ctx.image(item) for item in ctx.node.images]
        instruction = " ".join(p for p in ctx.parts() if isinstance(p, str))
        backend = ctx.backend
        reply = await ctx.call(lambda: backend.edit(images, instruction, seed=ctx.seed()))
        ref = await ctx.store_image(reply.image, png=reply.png)
        return ImageOutput.of(ref, reply)


register(Edit())
