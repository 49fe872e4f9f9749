import pytest

from umni.errors import ConfigError
from umni.graph import Graph, Ref


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
