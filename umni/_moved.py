"""Old import paths, kept for one release after umni/ was split into layered sub-packages.

`import umni.runner` (or any module of the old flat layout) still works: it warns with a
DeprecationWarning naming the new path and hands back the very module that lives there, so a
plugin's `monkeypatch` or `isinstance` checks see one object, never a second copy. One table, read
by one import hook, instead of forty files that each re-export a module.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType

#: old module -> its home since 0.2 (a submodule of an old name follows its parent's move)
MOVED = {
    "umni.errors": "umni.util.errors",
    "umni.secrets": "umni.util.secrets",
    "umni.filehash": "umni.util.filehash",
    "umni.codeid": "umni.util.codeid",
    "umni.storage": "umni.util.storage",
    "umni.events": "umni.util.events",
    "umni.progress": "umni.util.progress",
    "umni.tasks": "umni.util.tasks",
    "umni.policy": "umni.util.policy",
    "umni.spec": "umni.util.spec",
    "umni.sharding": "umni.util.sharding",
    "umni.choices": "umni.util.choices",
    "umni.extras": "umni.util.extras",
    "umni.artifacts": "umni.store",
    "umni.store.artifacts": "umni.store",  # split by job in 0.2; the package re-exports its names
    "umni.completion": "umni.store.completion",
    "umni.stores": "umni.store.urls",
    "umni.stores.base": "umni.store.results",
    "umni.stores.sqlite": "umni.store.sqlite",
    "umni.stores.postgres": "umni.store.postgres",
    "umni.stores.provenance": "umni.store.provenance",
    "umni.roles": "umni.backends.roles",
    "umni.bindings": "umni.backends.bindings",
    "umni.placement": "umni.backends.placement",
    "umni.placement_wire": "umni.backends.wire",
    "umni.outcomes": "umni.graph.outcomes",
    "umni.runner": "umni.engine.runner",
    "umni.keys": "umni.engine.keys",
    "umni.transcript": "umni.engine.transcript",
    "umni.kinds": "umni.engine.kinds",
    "umni.protocol": "umni.protocols.protocol",
    "umni.caseio": "umni.protocols.caseio",
    "umni.report": "umni.reporting.report",
    "umni.leaderboard": "umni.reporting.leaderboard",
    "umni.sweep_report": "umni.reporting.sweep_report",
    "umni.agreement": "umni.reporting.agreement",
    "umni.viewer": "umni.reporting.viewer",
    "umni.runs": "umni.reporting.runs",
    "umni.pricing": "umni.reporting.pricing",
    "umni.config": "umni.run.config",
    "umni.evaluation": "umni.run.evaluation",
    "umni.sweep": "umni.run.sweep",
    "umni.rejudge": "umni.run.rejudge",
}
# `umni.store`, `umni.graph` and `umni.backends` were modules and are now packages of the same name
# that re-export what the modules held, so they need no entry here.


def new_home(name: str) -> str | None:
    """Where the old module `name` lives now (None: it did not move)."""
    head, rest = name, ""
    while "." in head:
        if head in MOVED:
            return MOVED[head] + rest
        head, _, leaf = head.rpartition(".")
        rest = f".{leaf}{rest}"
    return None


class _Alias(importlib.abc.Loader):
    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warnings.warn(
            f"{self.old} moved to {self.new}; the old name works until the next release", DeprecationWarning, stacklevel=2
        )
        module = importlib.import_module(self.new)
        self._spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = self._spec  # the import system stamped the old name's spec on it


class _MovedFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        new = new_home(fullname) if fullname.startswith("umni.") else None
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Alias(fullname, new), is_package=True)


def install() -> None:
    if not any(isinstance(finder, _MovedFinder) for finder in sys.meta_path):
        # first in line: the default finder would load a second copy of a moved submodule through
        # its aliased parent's __path__
        sys.meta_path.insert(0, _MovedFinder())
