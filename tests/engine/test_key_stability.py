"""Cache keys are a promise to every existing cache: the same work must keep the same key across
umni versions unless KEY_SCHEMA is bumped on purpose. These keys were computed once and pinned;
a change to how keys are built (a faster encoder, a reordered field) must reproduce them exactly.
(Nodes downstream of an image are left out: their keys hold the PNG's hash, which depends on the
image library's encoder rather than on umni.)"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st

from umni.backends import create_backend
from umni.backends.bindings import Bindings
from umni.engine.keys import KEY_SCHEMA, identity_json, node_key
from umni.engine.runner import Runner
from umni.graph.graph import Graph
from umni.store.cache import Cache
from umni.store.hashing import fingerprint
from umni.util.events import EventLog
from umni.util.spec import Spec


def tally(**answers: int) -> int:
    return sum(1 for value in answers.values() if value == 0)


def pinned_graph() -> Graph:
    g = Graph("key-stability")
    g.generate("draw", ["a red cube left of a blue ball, é ü 字"], size=256)
    first = g.answer("q_text", ["Is 2 + 2 = 4?"], ["yes", "no"])
    second = g.answer("q_follow", ["Earlier you chose option", first, "— is that right?"], ["yes", "no"], repeat=1)
    g.compute("tally", tally, first=first, second=second)
    return g


PINNED = {
    "draw": "3494e5cca65b6842925ce8af97ee5c94d4054590a2cd239f10bd12305db82e5b",
    "q_text": "9c0ada6ff887f190102e397d290642eca506acc99d89876aac6dee88263657fc",
    "q_follow": "2d18a074c695a429762dd960b9f2d6c34e926a539daa51d4a7839293c32a79fa",
    "tally": "24e1b9419fa4c59dab6405bec7df55a0f6cfa1b994591bff68fc92aea67fb0ae",
}


def test_cache_keys_of_a_fixed_graph_are_unchanged(tmp_path: Path) -> None:
    backend = create_backend(Spec.parse("sim/umm"))
    bindings = Bindings({role: backend for role in ("generate", "edit", "understand")})
    events = EventLog(tmp_path / "events.jsonl")
    cache = Cache(tmp_path / "cache")
    try:
        result = anyio.run(Runner(bindings, cache, seed=7, events=events).run_graph, pinned_graph())
    finally:
        events.close()
        cache.close()
    assert all(outcome.status == "computed" for outcome in result.values())
    lines = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    keys = {line["node"]: line["key"] for line in lines if line["event"] == "node.done"}
    assert keys == PINNED


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None)
@given(params=st.dictionaries(st.text(max_size=6).filter(lambda k: k not in ("id", "prompt", "role")), json_values, max_size=4), seed=st.integers(0, 2**31), prompt=st.text(max_size=20))
def test_a_key_is_the_hash_of_its_fields_canonical_json(params: dict, seed: int, prompt: str) -> None:
    """The key of any node equals the plain definition: sha256 over the canonical JSON of all its
    fields, the backend's identity among them (however the key builder arranges the work)."""
    backend = create_backend(Spec.parse("sim/umm?skill=0.7"))
    g = Graph("c")
    g.respond("r", [prompt], **params)
    node = g.nodes["r"]
    inputs = {"prompt": [{"text": prompt}], "images": [], "inputs": {}}
    plain = fingerprint(
        {
            "schema": KEY_SCHEMA,
            "kind": node.kind,
            "version": node.version,
            "backend": backend.identity(),
            "params": {k: v for k, v in node.params.items() if not k.startswith("_")},
            "code": node.code_identity(),
            "inputs": inputs,
            "seed": seed,
            "repeat": node.repeat,
        }
    )
    assert node_key(node, backend, inputs, seed) == plain
    assert node_key(node, backend, inputs, seed, identity=identity_json(backend)) == plain
    assert node_key(node, None, inputs, seed) != plain
