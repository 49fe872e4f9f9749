"""Property: graphs that differ in any code, closure value, constant, input content or backend
identity never share a node key; graphs equal in all of those always do (issue 10, done-when)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import anyio
from fakes import ScriptedBackend
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from umni.backends.bindings import Bindings
from umni.engine.runner import Runner
from umni.graph.graph import Graph
from umni.store.cache import Cache
from umni.util.events import EventLog


def add(c):
    return lambda im, k: im.size[0] + c + k


def mul(c):
    return lambda im, k: im.size[0] * c + k


def sub(c):
    def f(im, k):
        return im.size[0] - c - k

    return f


def _bytecode_only(c):  # no source available: fingerprinted by bytecode, constants and names
    space: dict = {}
    exec(compile("def make(c):\n    return lambda im, k: im.size[1] + 2 * c + k\n", "<generated>", "exec"), space)
    return space["make"](c)


FACTORIES = {"add": add, "mul": mul, "sub": sub, "gen": _bytecode_only}

specs = st.fixed_dictionaries(
    {
        "code": st.sampled_from(sorted(FACTORIES)),
        "closure": st.integers(-3, 3),
        "const": st.integers(-3, 3),
        "text": st.sampled_from(["a red cube", "a blue ball", "image:" + "0" * 64]),
        "backend": st.sampled_from(["m1", "m2"]),
    }
)


def keys_of(spec: dict) -> dict[str, str]:
    """Run the spec's graph on a fresh cache and return each node's key, from the event log."""
    with tempfile.TemporaryDirectory() as tmp:
        g = Graph("case")
        img = g.generate("img", [spec["text"]])
        g.compute("f", FACTORIES[spec["code"]](spec["closure"]), const={"k": spec["const"]}, im=img)
        backend = ScriptedBackend(spec["backend"])
        events = EventLog(Path(tmp) / "events.jsonl")
        runner = Runner(Bindings({"generate": backend}), Cache(Path(tmp) / "cache"), events=events)
        anyio.run(runner.run_graph, g)
        events.close()
        lines = [json.loads(line) for line in (Path(tmp) / "events.jsonl").read_text().splitlines()]
    return {e["node"]: e["key"] for e in lines if e.get("event", e.get("type")) == "node.done" or "key" in e}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(a=specs, b=specs)
def test_keys_are_equal_exactly_when_everything_that_determines_the_work_is(a: dict, b: dict) -> None:
    ka, kb = keys_of(a), keys_of(b)
    assert (ka["f"] == kb["f"]) == (a == b)
    image_same = (a["text"], a["backend"]) == (b["text"], b["backend"])
    assert (ka["img"] == kb["img"]) == image_same


@settings(max_examples=20, deadline=None)
@given(a=specs)
def test_equal_graphs_always_share_every_key(a: dict) -> None:
    assert keys_of(a) == keys_of(dict(a))


@settings(max_examples=25, deadline=None)
@given(a=specs, gate_a=st.integers(-5, 5), gate_b=st.integers(-5, 5), floor_a=st.integers(-20, -6), floor_b=st.integers(-20, -6))
def test_a_gate_and_its_inputs_never_change_the_gated_nodes_key(a: dict, gate_a: int, gate_b: int, floor_a: int, floor_b: int) -> None:
    """Gates are evaluated, not hashed: another gate value or condition that lets the node run is the same work."""

    def gated_key(gate_value: int, floor: int) -> str:
        with tempfile.TemporaryDirectory() as tmp:
            g = Graph("case")
            img = g.generate("img", [a["text"]])
            gate = g.compute("gate", lambda: gate_value)
            f = g.compute("f", FACTORIES[a["code"]](a["closure"]), const={"k": a["const"]}, im=img)
            g.when(f, lambda flag, **_: flag > floor, flag=gate)
            events = EventLog(Path(tmp) / "events.jsonl")
            runner = Runner(Bindings({"generate": ScriptedBackend(a["backend"])}), Cache(Path(tmp) / "cache"), events=events)
            anyio.run(runner.run_graph, g)
            events.close()
            lines = [json.loads(line) for line in (Path(tmp) / "events.jsonl").read_text().splitlines()]
        return next(e["key"] for e in lines if e.get("node") == "f" and "key" in e)

    assert gated_key(gate_a, floor_a) == gated_key(gate_b, floor_b)
