import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from umni.graph.graph import Graph, Ref
from umni.util.errors import ConfigError


def test_cycle_is_rejected_with_node_names():
    g = Graph("c")
    g.compute("a", lambda b: b, b=Ref("b"))
    g.compute("b", lambda a: a, a=Ref("a"))
    with pytest.raises(ConfigError, match=r"cycle: .*a.*b"):
        g.validate()


def test_unbound_input_names_the_node():
    g = Graph("c")
    g.answer("q1", [Ref("missing"), "what?"], ["x", "y"])
    with pytest.raises(ConfigError, match="node 'q1'.*'missing'"):
        g.validate()


def test_role_not_bound_names_node_and_role():
    g = Graph("c")
    g.generate("draw", "a cat")
    with pytest.raises(ConfigError, match="node 'draw' needs role 'generate'.*--role generate=SPEC"):
        g.validate({"understand": object()})


def test_duplicate_node_id():
    g = Graph("c")
    g.generate("x", "a")
    with pytest.raises(ConfigError, match="'x' is used twice"):
        g.generate("x", "b")


def test_order_respects_dependencies():
    g = Graph("c")
    img = g.generate("draw", "a")
    edited = g.edit("edit", img, "b")
    g.answer("q", [edited, "?"], ["1", "2"])
    order = g.validate()
    assert order.index("draw") < order.index("edit") < order.index("q")


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_dependency_order_is_the_standard_librarys_topological_order(data) -> None:
    """The runner's node order (a priority among ready nodes) is exactly graphlib's static order."""
    from graphlib import TopologicalSorter

    from umni.graph.graph import _dependency_order

    size = data.draw(st.integers(1, 12))
    upstream = {
        f"n{i}": [f"n{j}" for j in data.draw(st.lists(st.integers(0, i - 1), max_size=4))] if i else []
        for i in range(size)
    }
    assert _dependency_order("c", upstream) == list(TopologicalSorter(upstream).static_order())
