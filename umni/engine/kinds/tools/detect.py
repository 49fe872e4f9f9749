"""``detect``: boxes for the labels the node asks for (``labels`` parameter)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from PIL import Image

from umni.backends import roles as R
from umni.engine.kinds.base import KindContext
from umni.engine.kinds.tools import ToolRole, register_tool
from umni.graph.params import DetectParams


class Detect(ToolRole):
    name = "detect"
    interface = R.ObjectDetector
    Params = DetectParams

    async def run(self, ctx: KindContext, image: Image.Image) -> Any:
        labels = DetectParams.of(ctx.node).labels
        backend = ctx.backend
        found = await ctx.call(lambda: backend.detect(image, labels))
        return [asdict(d) for d in found]


register_tool(Detect())
