"""Node parameters the engine reads are typed per kind (umni.graph.params): a value of the wrong
type is refused when the graph is validated, naming the case, the node and the parameter, instead
of failing (or being silently coerced) inside a node at run time; the parameters a kind does not
declare are kept, and the dict that enters the cache key is never rewritten."""

from __future__ import annotations

import pytest

from umni.graph.graph import Graph, ImageFile
from umni.graph.params import AnswerParams, ComputeParams, JudgeParams, TextParams
from umni.util.errors import ConfigError


def test_a_max_tokens_that_is_no_number_is_refused_naming_node_and_parameter():
    g = Graph("case-7")
    g.respond("plan", "make a plan", max_tokens="many")
    with pytest.raises(ConfigError, match=r"case 'case-7', node 'plan': parameter max_tokens: .*integer"):
        g.validate()


def test_a_judge_request_option_of_the_wrong_type_is_refused():
    g = Graph("c")
    g.judge("verdict", "rate it", parse=int, temperature="warm")
    with pytest.raises(ConfigError, match=r"node 'verdict': parameter temperature"):
        g.validate()


def test_detect_without_labels_is_refused_before_any_call():
    g = Graph("c")
    g.tool("boxes", "detect", ImageFile("/nonexistent.png"))
    with pytest.raises(ConfigError, match=r"node 'boxes': parameter labels: Field required"):
        g.validate()


def test_params_read_typed_keep_undeclared_ones_and_leave_the_key_dict_alone():
    g = Graph("c")
    ref = g.judge("verdict", "rate it", parse=int, max_tokens=64, temperature=0, note="kept")
    g.validate()
    node = g.nodes[ref.node]
    params = JudgeParams.of(node)
    assert (params.max_tokens, params.temperature, params.parser) == (64, 0.0, "builtins.int")
    assert params.model_extra == {"note": "kept"}
    assert node.params["temperature"] == 0 and type(node.params["temperature"]) is int  # the key's input, as given
    assert TextParams.of(g.nodes[g.respond("r", "x").node]).max_tokens_or(512) == 512
    assert AnswerParams.of(g.nodes[g.answer("q", "which?", ["a", "b"]).node]).options == ["a", "b"]
    assert ComputeParams.of(g.nodes[g.compute("f", len, const={"k": 1}).node]).const == {"k": 1}
