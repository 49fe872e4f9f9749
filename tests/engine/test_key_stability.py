"""Cache keys are a promise to every existing cache: the same work must keep the same key across
umni versions unless KEY_SCHEMA is bumped on purpose. These keys were computed once and pinned;
a change to how keys are built (a faster encoder, a reordered field) must reproduce them exactly.
(Nodes downstream of an image are left out: their keys hold the PNG's hash, which depends on the
image library's encoder rather than on umni.)"""

from __future__ import annotations

import json
from pathlib import Path

import anyio

from umni.backends import create_backend
from umni.bindings import Bindings
from umni.events import EventLog
from umni.graph import Graph
from umni.runner import Runner
from umni.spec import Spec
from umni.store import Cache


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
