"""Loading what a plugin's metadata names, so a stale or broken install is one line, not a traceback.

A plugin's entry point outlives the code it names: a class renamed in a new version, a package
uninstalled while its metadata stayed, a dependency missing. Python reports each as an
AttributeError or ImportError from deep inside importlib; the user needs the entry point, the
distribution that declared it, and what to do.
"""

from __future__ import annotations

import sys
from importlib import metadata
from importlib.metadata import EntryPoint, EntryPoints
from typing import Any, cast

from umni.util.errors import ConfigError

__all__ = ["entry_points", "load_entry_point"]

#: The entry points of every distribution on `sys.path` as it was when they were read.
_read: tuple[tuple[str, ...], EntryPoints] | None = None


def entry_points(*, group: str) -> EntryPoints:
    """`importlib.metadata.entry_points(group=...)`, the installed metadata read once per `sys.path`:
    each look-up reads every distribution's files (about 230 in a full install, some 20 ms), and a
    sweep task looks up five groups. A path changed since (a plugin's folder added) reads them again."""
    global _read
    path = tuple(sys.path)
    read = _read
    if read is None or read[0] != path:
        # Python 3.11 answers a SelectableGroups, which selects as EntryPoints does
        read = _read = (path, cast(EntryPoints, metadata.entry_points()))
    return read[1].select(group=group)


def load_entry_point(ep: EntryPoint) -> Any:
    """The object `ep` names; a ConfigError naming the entry point and its distribution when it
    cannot be loaded."""
    try:
        return ep.load()
    except (ImportError, AttributeError) as exc:
        dist = getattr(ep, "dist", None)
        source = f" (declared by {dist.name} {dist.version})" if dist is not None else ""
        cause = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigError(
            f"entry point {ep.group}:{ep.name} = {ep.value}{source} cannot be loaded: {cause}; "
            "reinstall or upgrade that package, or uninstall it if it is no longer wanted"
        ) from None
