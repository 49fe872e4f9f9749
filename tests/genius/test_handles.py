"""GENIUS's record reads outcomes through the typed handles `build` returned, never by node id."""

from __future__ import annotations

import dataclasses
from typing import Any

import anyio
import pytest

from tests.support.handles import renamed
from umni.backends.bindings import Bindings
from umni.engine.runner import Runner
from umni.graph.graph import Ref
from umni.graph.outcomes import CaseResult
from umni.store.cache import Cache
from umni_graphs.genius import PROTOCOL
from umni_graphs.genius.graph import GeniusHandles

#: Every kind of node a GENIUS graph can have: plan, reflection rounds with critiques, copy checks, probe.
RICH = {"plan": "true", "vqa_probe": "true", "reflection_rounds": "2", "hints": "multimodal", "judge_rounds": "2"}


def refs(value: Any) -> list[Ref]:
    """Every Ref held in `value`."""
    if isinstance(value, Ref):
        return [value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [r for f in dataclasses.fields(value) for r in refs(getattr(value, f.name))]
    if isinstance(value, dict):
        return [r for v in value.values() for r in refs(v)]
    if isinstance(value, (tuple, list)):
        return [r for v in value for r in refs(v)]
    return []


def _case_with_reference_hint(options: Any) -> Any:
    """A bundled case with a vc_hint that names a reference image (so it has copy-check nodes)."""
    cases = PROTOCOL.load(PROTOCOL.bundled_cases(), options).cases
    return next(t for t in cases if any(h.reference is not None for h in t.case.vc_hints))


def _run(case: Any, options: Any, cache: Cache) -> CaseResult[Any]:
    runner = Runner(Bindings.from_specs("sim/umm"), cache)
    return anyio.run(runner.run_graph, PROTOCOL.build(case, options))


def test_build_returns_handles_to_every_node_the_record_reads():
    options = PROTOCOL.parse_options(RICH)
    task = _case_with_reference_hint(options)
    graph = PROTOCOL.build(task, options)
    handles = graph.handles
    assert isinstance(handles, GeniusHandles)
    assert len(handles.rounds) == 3 and handles.plan is not None and handles.probe is not None
    assert [r.critique is not None for r in handles.rounds] == [True, True, False]
    assert all(r.image.type == "image" for r in handles.rounds)
    for round_handles in handles.rounds:
        assert len(round_handles.rc) == len(round_handles.aq) == 2
        assert len(round_handles.vc) == len(task.case.vc_hints)
        for hint, checks in zip(task.case.vc_hints, round_handles.vc):
            assert (checks is None) == (hint.reference is None)
            assert checks is None or (checks.copy is not None and len(checks.rounds) == 2)
    held = refs(handles)
    assert len(held) == len({r.node for r in held}) and all(r.node in graph.nodes for r in held)
    # all but the critic's own Rule Compliance verdicts (2 a round that gates a next one) are read
    assert len(graph.nodes) - len(held) == 2 * 2


def test_without_copy_judge_a_hint_has_no_copy_handle():
    options = PROTOCOL.parse_options({"copy_judge": "false"})
    handles = PROTOCOL.build(_case_with_reference_hint(options), options).handles
    checks = [c for c in handles.rounds[0].vc if c is not None]
    assert checks and all(c.copy is None for c in checks)
    assert handles.plan is None and handles.probe is None


@pytest.mark.parametrize("pairs", [{}, RICH])
def test_record_depends_on_node_ids_only_through_the_handles(tmp_path, pairs):
    options = PROTOCOL.parse_options(pairs)
    task = _case_with_reference_hint(options)
    result = _run(task, options, Cache(tmp_path))
    assert isinstance(result.handles, GeniusHandles)
    expected = PROTOCOL.record(task, result, options)

    names = {nid: f"n{i}" for i, nid in enumerate(sorted(result))}
    other = CaseResult({names[nid]: dataclasses.replace(o, node=names[nid]) for nid, o in result.items()}, renamed(result.handles, names))
    got = PROTOCOL.record(task, other, options)
    assert {k: v for k, v in got.items() if k != "nodes"} == {k: v for k, v in expected.items() if k != "nodes"}
    assert got["scores"] is not None and all(r["ran"] for r in got["rounds"])
    if pairs:
        assert got["plan"] is not None and got["plan"]["text"]
        assert got["probe"] is not None and got["probe"]["predicted"] is not None
        assert [r["critique"] is not None for r in got["rounds"]] == [True, True, False]


def test_a_plain_mapping_of_outcomes_still_records(tmp_path):
    """Callers that pass a plain dict (no handles) get the handles of a fresh build."""
    options = PROTOCOL.parse_options(RICH)
    task = _case_with_reference_hint(options)
    result = _run(task, options, Cache(tmp_path))
    assert PROTOCOL.record(task, dict(result), options) == PROTOCOL.record(task, result, options)
