"""Public names that load on first use (PEP 562), shared by umni's public fronts.

`import umni` and `import umni.plugin` must stay light: the CLI, a Slurm task that finds nothing to
compute and the viewer start from them. So a front lists `name -> defining module` and the module is
imported when the name is first read, then kept in the front's globals.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_front(front: str, exports: Mapping[str, str], namespace: dict[str, Any]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for the module `front` whose public names are `exports`."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {front!r} has no attribute {name!r}")
        value = getattr(import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(namespace.get("__all__", exports))

    return __getattr__, __dir__
