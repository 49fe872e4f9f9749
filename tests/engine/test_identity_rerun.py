"""Issue 25.1: a node's code fingerprint is taken when its key is made, not once per node. Re-running
the same `Graph` object after a global it reads changed must compute the new value, and must not store
that value under the key that describes the old global (which would poison a later, correct run)."""

from __future__ import annotations

import anyio
from fakes import ScriptedBackend

from umni.backends.bindings import Bindings
from umni.engine.runner import Runner
from umni.graph.graph import Graph
from umni.store.cache import Cache

SCALE = 1


def _scaled() -> int:
    return 10 * SCALE


def _run(graph: Graph, cache: Cache) -> dict:
    bindings = Bindings({r: ScriptedBackend() for r in ("generate", "edit", "understand", "judge")})
    return anyio.run(Runner(bindings, cache).run_graph, graph)


def _graph() -> Graph:
    g = Graph("c")
    g.compute("scaled", _scaled)
    return g


def test_a_rerun_of_the_same_graph_sees_a_changed_global(tmp_path, monkeypatch):
    cache = Cache(tmp_path)
    graph = _graph()
    assert _run(graph, cache)["scaled"].value == 10
    monkeypatch.setitem(globals(), "SCALE", 2)
    again = _run(graph, cache)["scaled"]  # warm cache: the old key would return 10
    assert (again.value, again.status) == (20, "computed")


def test_a_changed_global_does_not_poison_the_key_of_the_old_one(tmp_path, monkeypatch):
    graph = _graph()
    graph.validate()  # fingerprints taken with SCALE = 1
    monkeypatch.setitem(globals(), "SCALE", 2)
    cache = Cache(tmp_path)
    assert _run(graph, cache)["scaled"].value == 20  # cold cache: stored under the key of SCALE = 2
    monkeypatch.setitem(globals(), "SCALE", 1)
    fresh = _run(_graph(), cache)["scaled"]  # a correct graph for SCALE = 1 must not get 20
    assert fresh.value == 10


def test_a_model_node_and_an_unchanged_function_keep_their_fingerprint():
    graph = _graph()
    node = graph.nodes["scaled"]
    assert node.code_identity() == node.code_identity()
