"""Cache identity holes found by outside probes (issue 25, items 2-4): a changed helper module, a
partial or callable object, a case image rewritten in place. Each returned a stale value or never
hit the cache across processes."""

from __future__ import annotations

import functools
import importlib
import os
import sys
import textwrap
from pathlib import Path

import anyio
import pytest
from PIL import Image

from umni.backends.bindings import Bindings
from umni.engine.runner import Runner
from umni.graph.graph import Graph
from umni.graph.nodes import ImageFile
from umni.store.cache import Cache
from umni.util.filehash import file_sha256


def run(graph: Graph, cache: Cache, runner: Runner | None = None) -> dict:
    runner = runner or Runner(Bindings.from_specs("sim/umm"), cache)
    return anyio.run(runner.run_graph, graph)


@pytest.fixture
def helper_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A user module on sys.path that a test can rewrite and reload."""
    monkeypatch.syspath_prepend(str(tmp_path))
    path = tmp_path / "umni_probe_helpers.py"

    def write(body: str):
        path.write_text(textwrap.dedent(body))
        sys.modules.pop("umni_probe_helpers", None)
        importlib.invalidate_caches()
        return importlib.import_module("umni_probe_helpers")

    yield write
    sys.modules.pop("umni_probe_helpers", None)


def test_a_helper_reached_through_a_module_attribute_is_part_of_the_key(tmp_path, helper_module):
    cache = Cache(tmp_path / "cache")
    helpmod = helper_module("def helper(x):\n    return x + 1\n")

    def graph() -> Graph:
        g = Graph("c")
        g.compute("value", lambda: helpmod.helper(1))
        return g

    assert run(graph(), cache)["value"].value == 2
    helpmod = helper_module("def helper(x):\n    return x + 100\n")  # the body changed, the name did not
    outcome = run(graph(), cache)["value"]
    assert (outcome.status, outcome.value) == ("computed", 101)


def test_a_constant_reached_through_a_nested_user_module_is_part_of_the_key(tmp_path, helper_module):
    cache = Cache(tmp_path / "cache")
    helpmod = helper_module("import types\nsettings = types.SimpleNamespace()\nLIMIT = 3\n")

    def graph() -> Graph:
        g = Graph("c")
        g.compute("value", lambda: helpmod.LIMIT * 2)
        return g

    assert run(graph(), cache)["value"].value == 6
    helpmod = helper_module("import types\nsettings = types.SimpleNamespace()\nLIMIT = 5\n")
    assert run(graph(), cache)["value"].value == 10


def scale(x: int, *, factor: int) -> int:
    return x * factor


class Scaler:
    def __init__(self, factor: int) -> None:
        self.factor = factor

    def __call__(self, x: int) -> int:
        return x * self.factor


@pytest.mark.parametrize("make", [lambda: functools.partial(scale, factor=3), lambda: Scaler(3)], ids=["partial", "object"])
def test_partials_and_callable_objects_hit_the_cache_when_rebuilt(tmp_path, make):
    cache = Cache(tmp_path / "cache")

    def graph() -> Graph:
        g = Graph("c")
        g.compute("value", make(), const={"x": 2})
        return g

    first = graph()
    assert "0x" not in first.nodes["value"].params["fn"]
    assert run(first, cache)["value"].value == 6
    again = run(graph(), cache)["value"]  # an equal callable, built anew (another memory address)
    assert (again.status, again.value) == ("cached", 6)


def test_a_changed_partial_argument_is_a_new_key(tmp_path):
    cache = Cache(tmp_path / "cache")
    for factor in (3, 4):
        g = Graph("c")
        g.compute("value", functools.partial(scale, factor=factor), const={"x": 2})
        assert run(g, cache)["value"].value == 2 * factor


def rewrite_keeping_size_and_mtime(path: Path, colour: str) -> None:
    before = path.stat()
    Image.new("RGB", (32, 32), colour).save(path, format="BMP")  # BMP: the size depends on the pixels count only
    assert path.stat().st_size == before.st_size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def test_a_case_image_rewritten_in_place_is_read_again_by_a_reused_runner(tmp_path):
    cache = Cache(tmp_path / "cache")
    picture = tmp_path / "case.bmp"
    Image.new("RGB", (32, 32), "red").save(picture, format="BMP")
    runner = Runner(Bindings.from_specs("sim/umm"), cache)

    def graph() -> Graph:
        g = Graph("c")
        g.edit("edited", ImageFile(picture), "make it brighter")
        return g

    first = run(graph(), cache, runner)["edited"]
    rewrite_keeping_size_and_mtime(picture, "blue")
    second = run(graph(), cache, runner)["edited"]
    assert second.status == "computed" and second.image != first.image


def test_the_remembered_file_hash_notices_a_rewrite_that_keeps_size_and_mtime(tmp_path):
    picture = tmp_path / "case.bmp"
    Image.new("RGB", (32, 32), "red").save(picture, format="BMP")
    before = file_sha256(picture)
    rewrite_keeping_size_and_mtime(picture, "blue")
    assert file_sha256(picture) != before
