"""``embed``: one feature vector for the image, as a list of floats."""

from __future__ import annotations

from typing import Any

from PIL import Image

from umni.backends import roles as R
from umni.engine.kinds.base import KindContext
from umni.engine.kinds.tools import ToolRole, register_tool


class Embed(ToolRole):
    name = "embed"
    interface = R.ImageEmbedder

    async def run(self, ctx: KindContext, image: Image.Image) -> Any:
        backend = ctx.backend
        vectors = await ctx.call(lambda: backend.embed([image]))
        return [float(x) for x in vectors[0]]


register_tool(Embed())
