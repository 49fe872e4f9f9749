"""``tool``: one call of a tool role (ocr, detect, embed, ...) on one image; output {"value"}.

Each tool role is one module of `umni.kinds.tools` (a `ToolRole` naming its backend interface):
adding a tool role is adding that module, after which ``--role NAME=SPEC`` binds it.
"""

from __future__ import annotations

from umni.backends import roles as R
from umni.engine.kinds import register
from umni.engine.kinds.base import Kind, KindContext
from umni.engine.kinds.compute import ValueOutput
from umni.engine.kinds.tools import find_tool, known_tools
from umni.graph.graph import Node
from umni.util.errors import ConfigError


class Tool(Kind):
    name = "tool"
    Output = ValueOutput

    def check(self, node: Node, where: str) -> None:
        tool = find_tool(node.role) if node.role is not None else None
        if tool is None:
            raise ConfigError(f"{where}: tool role must be one of {', '.join(known_tools())}")
        if len(node.images) != 1:
            raise ConfigError(f"{where}: a tool node reads exactly one image")
        tool.Params.of(node, where)

    async def execute(self, ctx: KindContext) -> ValueOutput:
        assert ctx.node.role is not None
        tool = find_tool(ctx.node.role)
        assert tool is not None
        image = ctx.image(ctx.node.images[0])
        return ValueOutput(value=await tool.run(ctx, image))


register(Tool())

assert set(R.TOOL_ROLES) <= set(known_tools()), "every tool role in umni.roles has a module in umni.kinds.tools"
