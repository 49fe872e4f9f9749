"""Loading what a plugin's metadata names, so a stale or broken install is one line, not a traceback.

A plugin's entry point outlives the code it names: a class renamed in a new version, a package
uninstalled while its metadata stayed, a dependency missing. Python reports each as an
AttributeError or ImportError from deep inside importlib; the user needs the entry point, the
distribution that declared it, and what to do.
"""

from __future__ import annotations

from importlib.metadata import EntryPoint
from typing import Any

from umni.util.errors import ConfigError

__all__ = ["load_entry_point"]


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
