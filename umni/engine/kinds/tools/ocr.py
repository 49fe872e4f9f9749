"""``ocr``: the lines of text in an image, each with its box and confidence."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from PIL import Image

from umni.backends import roles as R
from umni.engine.kinds.base import KindContext
from umni.engine.kinds.tools import ToolRole, register_tool


class Ocr(ToolRole):
    name = "ocr"
    interface = R.TextReader

    async def run(self, ctx: KindContext, image: Image.Image) -> Any:
        backend = ctx.backend
        lines = await ctx.call(lambda: backend.read_text(image))
        return [asdict(line) for line in lines]


register_tool(Ocr())
