"""What enters a node's key (issue 10.1, 10.3, 10.5, 16.5): code, closure values, constants, typed
inputs and parsed judge values; not gate inputs, a judge's wording, or a function's formatting."""

from __future__ import annotations

import textwrap
import threading

import anyio
import numpy as np
import pytest
from fakes import ScriptedBackend

from umni.backends.bindings import Bindings
from umni.engine.runner import Runner
from umni.graph.graph import Graph, Ref
from umni.store.cache import Cache
from umni.util.codeid import code_fingerprint
from umni.util.errors import ConfigError


def bind(backend):
    return Bindings({r: backend for r in ("generate", "edit", "understand", "judge")})


def run(graph, cache, backend=None):
    return anyio.run(Runner(bind(backend or ScriptedBackend()), cache).run_graph, graph)


def four(g: Graph) -> Ref:
    return g.compute("four", lambda: 4)


def test_two_lambdas_in_one_graph_do_not_share_a_key(tmp_path):
    g = Graph("c")
    x = four(g)
    g.compute("plus_one", lambda v: v + 1, v=x)
    g.compute("times_ten", lambda v: v * 10, v=x)
    out = run(g, Cache(tmp_path))
    assert (out["plus_one"].value, out["times_ten"].value) == (5, 40)
    assert out["times_ten"].status == "computed"


def _threshold_graph(threshold: float) -> Graph:
    g = Graph("c")
    x = four(g)
    g.compute("over", lambda v: v > threshold, v=x)
    return g


def test_a_closure_over_another_constant_is_other_work(tmp_path):
    cache = Cache(tmp_path)
    assert run(_threshold_graph(3), cache)["over"].value is True
    second = run(_threshold_graph(5), cache)["over"]
    assert (second.value, second.status) == (False, "computed")


def _compiled(source: str, name: str = "f"):
    space: dict = {}
    exec(compile(textwrap.dedent(source), f"<test {abs(hash(source))}>", "exec"), space)
    return space[name]


def test_an_edited_body_is_other_work_and_formatting_is_not():
    plain = _compiled("def f(v):\n    return v + 1\n")
    edited = _compiled("def f(v):\n    return v + 2\n")
    reformatted = _compiled("def f(v):  # add one\n\n    return (v\n            + 1)\n")
    fp = lambda fn: code_fingerprint(fn, what="test")  # noqa: E731
    assert fp(plain) != fp(edited)
    assert fp(plain) == fp(reformatted)


HELPER_OFFSET = 1


def _helper(v):
    return v + HELPER_OFFSET


def test_a_helper_and_a_module_constant_it_reads_are_part_of_the_code(monkeypatch):
    def uses_helper(v):
        return _helper(v)

    before = code_fingerprint(uses_helper, what="test")
    monkeypatch.setattr(__import__(__name__), "HELPER_OFFSET", 2, raising=False)
    monkeypatch.setitem(uses_helper.__globals__, "HELPER_OFFSET", 2)
    assert code_fingerprint(uses_helper, what="test") != before


def test_a_closure_without_a_stable_value_is_refused_naming_the_node():
    lock = threading.Lock()
    g = Graph("c1")
    x = four(g)
    g.compute("locked", lambda v: (lock, v)[1], v=x)
    with pytest.raises(ConfigError, match="case 'c1', node 'locked'"):
        g.validate()


def test_gate_inputs_are_evaluated_not_hashed(tmp_path):
    cache = Cache(tmp_path)

    def graph(gate_value: int) -> Graph:
        g = Graph("c")
        gate = g.compute("gate", lambda: gate_value)
        x = four(g)
        out = g.compute("double", lambda v: v * 2, v=x)
        g.when(out, lambda flag, **inputs: flag > 0, flag=gate)
        return g

    assert run(graph(1), cache)["double"].status == "computed"
    again = run(graph(7), cache)["double"]  # another gate value that lets it run: same work
    assert (again.status, again.value) == ("cached", 8)
    assert run(graph(0), cache)["double"].status == "skipped"


def test_a_judge_counts_downstream_by_its_parsed_value_not_its_wording(tmp_path):
    cache = Cache(tmp_path)

    def graph() -> Graph:
        g = Graph("c")
        verdict = g.judge("j", ["rate it"], parse=lambda text: int(text.split()[-1]))
        g.compute("half", lambda v: v["value"] / 2 if isinstance(v, dict) else v / 2, v=verdict)
        return g

    run(graph(), cache, ScriptedBackend(judge_text="Score: 4"))
    out = run(graph(), cache, ScriptedBackend(judge_text="I give it 4", tag="other"))
    assert out["j"].status == "computed"
    assert out["half"].status == "cached"


def test_text_equal_to_an_image_hash_is_not_that_image(tmp_path):
    cache = Cache(tmp_path)
    backend = ScriptedBackend()
    g = Graph("c")
    img = g.generate("img", ["a red cube"])
    first = run(g, cache, backend)
    sha = first["img"].output["image"]["sha256"]

    h = Graph("d")
    a = h.generate("img", ["a red cube"])
    h.answer("by_image", [a], ["x", "y", "z"])
    h.answer("by_text", ["image:" + sha], ["x", "y", "z"])
    out = run(h, cache, backend)
    assert out["by_text"].status == "computed"
    assert img.node == "img"


def test_numpy_values_are_converted_or_refused_per_node(tmp_path):
    g = Graph("c")
    x = four(g)
    g.compute("np_int", lambda v: np.int64(v), v=x)
    g.compute("np_array", lambda v: np.arange(v), v=x)
    g.compute("an_object", lambda v: object(), v=x)
    g.compute("after", lambda v: v + 1, v=x)
    out = run(g, Cache(tmp_path))
    assert (out["np_int"].value, type(out["np_int"].value)) == (4, int)
    assert out["np_array"].value == [0, 1, 2, 3]
    assert out["an_object"].status == "failed" and "not JSON" in out["an_object"].failure.message
    assert out["after"].value == 5


def test_a_const_that_is_not_json_fails_only_its_node(tmp_path):
    g = Graph("c")
    x = four(g)
    g.compute("bad", lambda v, k: v, const={"k": object()}, v=x)
    g.compute("good", lambda v: v, v=x)
    out = run(g, Cache(tmp_path))
    assert out["bad"].status == "failed"
    assert out["good"].value == 4


def test_an_input_named_like_a_builder_keyword(tmp_path):
    g = Graph("c")
    x = four(g)
    with pytest.raises(ConfigError, match="'version' collides"):
        g.compute("v", lambda version: version, version=x)
    g.compute_with("v", lambda version, when: version + when, {"version": x, "when": x})
    assert run(g, Cache(tmp_path))["v"].value == 8


def test_resuming_a_long_cached_chain_does_not_recurse(tmp_path):
    cache = Cache(tmp_path)

    def chain() -> Graph:
        g = Graph("long")
        ref = four(g)
        for i in range(1500):
            ref = g.compute(f"n{i}", lambda v: v + 1, v=ref)
        return g

    assert run(chain(), cache)["n1499"].value == 1504
    resumed = run(chain(), cache)
    assert resumed["n1499"].status == "cached" and resumed["n1499"].value == 1504
