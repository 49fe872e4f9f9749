"""Plugins written against umni 0.1's flat module paths keep working for one release: each old path
warns with its new home and hands back the very module that lives there (one object, not a copy)."""

import importlib
import json
import subprocess
import sys

import pytest

from umni._moved import MOVED, new_home

CHECK = """
import importlib, json, sys, warnings
from umni._moved import MOVED
found = {}
for old in sorted(MOVED):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(old)
    messages = [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]
    found[old] = [module is importlib.import_module(MOVED[old]), module.__spec__.name, messages]
print(json.dumps(found))
"""


def test_every_old_path_warns_and_is_the_new_module():
    out = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, check=True).stdout
    for old, (same, spec_name, messages) in json.loads(out).items():
        assert same and spec_name == MOVED[old], old
        assert f"{old} moved to {MOVED[old]}; the old name works until the next release" in messages, old


def test_a_submodule_of_a_moved_package_is_not_loaded_twice():
    with pytest.warns(DeprecationWarning):
        ocr = importlib.import_module("umni.kinds.tools.ocr")
    assert ocr is importlib.import_module("umni.engine.kinds.tools.ocr")
    assert new_home("umni.kinds.tools.ocr") == "umni.engine.kinds.tools.ocr"
    assert new_home("umni.engine.runner") is None


def test_modules_that_became_packages_keep_their_names():
    from umni.backends import Backend, create_backend  # noqa: F401 - umni.backends was a module
    from umni.graph import Graph, ImageFile, Ref  # noqa: F401 - so was umni.graph
    from umni.store import Cache, RunStore  # noqa: F401 - and umni.store


def test_an_install_without_the_kind_entry_points_says_so_on_every_look_up(monkeypatch):
    from importlib.metadata import EntryPoints

    from umni.graph import registry
    from umni.util.errors import ConfigError

    monkeypatch.setattr(registry, "_KINDS", {})
    monkeypatch.setattr(registry, "_loaded", False)
    monkeypatch.setattr(registry, "entry_points", lambda group: EntryPoints(()))
    for _ in range(2):
        with pytest.raises(ConfigError, match="reinstall umni"):
            registry.find_kind("generate")
