"""UmniBench's record reads outcomes through the typed handles `build` returned, not node ids."""

from __future__ import annotations

import dataclasses

import anyio

from tests.support.handles import renamed
from umni.backends.bindings import Bindings
from umni.engine.runner import Runner
from umni.graph.outcomes import CaseResult
from umni.store.cache import Cache
from umni_graphs.umnibench.graph import UmniHandles
from umni_graphs.umnibench.protocol import PROTOCOL


def test_build_returns_handles_to_every_scored_node():
    case = PROTOCOL.load(PROTOCOL.bundled_cases(), PROTOCOL.parse_options({})).cases[0]
    graph = PROTOCOL.build(case, PROTOCOL.parse_options({}))
    handles = graph.handles
    assert isinstance(handles, UmniHandles)
    assert [h.image.type for h in handles.stages.values()] == ["image"] * 3
    answers = [ref for h in handles.stages.values() for ref in h.answers.values()]
    assert len(answers) == 9 and all(ref.node in graph.nodes and ref.type == "value" for ref in answers)


def test_record_depends_on_node_ids_only_through_the_handles(tmp_path):
    options = PROTOCOL.parse_options({})
    case = PROTOCOL.load(PROTOCOL.bundled_cases(), options).cases[0]
    graph = PROTOCOL.build(case, options)
    runner = Runner(Bindings.from_specs("sim/umm"), Cache(tmp_path))
    result = anyio.run(runner.run_graph, graph)
    assert isinstance(result, CaseResult) and result.handles is graph.handles
    expected = PROTOCOL.record(case, result, options)

    names = {nid: f"n{i}" for i, nid in enumerate(sorted(result))}
    other = CaseResult({names[nid]: dataclasses.replace(o, node=names[nid]) for nid, o in result.items()}, renamed(result.handles, names))
    got = PROTOCOL.record(case, other, options)
    assert {k: v for k, v in got.items() if k != "nodes"} == {k: v for k, v in expected.items() if k != "nodes"}
    assert sum(q["predicted"] is not None for q in got["questions"].values()) == 9


def test_a_plain_mapping_of_outcomes_still_records(tmp_path):
    """Callers that pass a plain dict (no handles) get the handles of a fresh build."""
    options = PROTOCOL.parse_options({})
    case = PROTOCOL.load(PROTOCOL.bundled_cases(), options).cases[0]
    runner = Runner(Bindings.from_specs("sim/umm"), Cache(tmp_path))
    result = anyio.run(runner.run_graph, PROTOCOL.build(case, options))
    assert PROTOCOL.record(case, dict(result), options) == PROTOCOL.record(case, result, options)
