"""Tool roles, one module each (ocr, detect, embed). A module registers a `ToolRole`; the package
imports its modules (by name, in `_load`) the first time a tool role is looked up, and a plugin's
modules through the ``umni.tools`` entry-point group."""

from __future__ import annotations

from typing import Any, ClassVar

from PIL import Image

from umni.backends.roles import register_tool_role
from umni.engine.kinds.base import KindContext
from umni.graph.params import NodeParams
from umni.util.entrypoints import entry_points, load_entry_point

__all__ = ["ToolRole", "find_tool", "known_tools", "register_tool"]


class ToolRole:
    """One tool role: its name and how a node of it calls the bound backend on an image. `run`
    returns the node's value (JSON: lists, numbers, strings)."""

    name: ClassVar[str]
    #: The methods a backend bound to this role must have (a runtime-checkable Protocol class).
    interface: ClassVar[type]
    #: The node parameters the role reads (checked when the graph is validated).
    Params: ClassVar[type[NodeParams]] = NodeParams

    async def run(self, ctx: KindContext, image: Image.Image) -> Any:
        raise NotImplementedError


_TOOLS: dict[str, ToolRole] = {}
_loaded = False


def register_tool(tool: ToolRole) -> ToolRole:
    _TOOLS[tool.name] = tool
    register_tool_role(tool.name, tool.interface)  # so bindings accept the role
    return tool


def _load() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        from umni.engine.kinds.tools import detect, embed, ocr  # noqa: F401  (each registers itself)

        for ep in entry_points(group="umni.tools"):
            load_entry_point(ep)


def find_tool(role: str) -> ToolRole | None:
    _load()
    return _TOOLS.get(role)


def known_tools() -> list[str]:
    _load()
    return sorted(_TOOLS)
