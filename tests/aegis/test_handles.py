"""AEGIS's record reads outcomes through the typed handles `build` returned, never by node id."""

from __future__ import annotations

import dataclasses
from typing import Any

import anyio
import pytest

from tests.support.handles import renamed
from umni.backends.bindings import Bindings
from umni.engine.runner import Runner
from umni.graph.outcomes import CaseResult
from umni.store.cache import Cache
from umni.util.policy import RetryPolicy
from umni_graphs.aegis.graph import AegisHandles
from umni_graphs.aegis.protocol import PROTOCOL

CASES = PROTOCOL.load(PROTOCOL.bundled_cases(), PROTOCOL.parse_options({})).cases
VARIANTS = [{}, {"reasoning": "plugin"}, {"rewrite": "self"}, {"condition_on_previous": "true", "max_images": "3"}]


def _first(task: str) -> Any:
    return next(c for c in CASES if c.task == task)


def test_handles_name_the_nodes_of_each_task():
    options = PROTOCOL.parse_options({"max_images": "4"})
    understanding = PROTOCOL.build(_first("understanding"), options).handles
    assert isinstance(understanding, AegisHandles)
    assert understanding.answer is not None and understanding.images == () and understanding.judge_inputs == ()
    for task in ("generation", "editing"):
        handles = PROTOCOL.build(_first(task), options).handles
        assert handles.answer is None and len(handles.images) == 1 and handles.images[0].type == "image"
    graph = PROTOCOL.build(_first("interleaved"), options)
    handles = graph.handles
    assert handles.answer is not None and len(handles.images) == 4 and len(handles.judge_inputs) == 1
    assert handles.judge.node in graph.nodes and all(r.node in graph.nodes for r in (*handles.images, *handles.judge_inputs))
    assert handles.plan is None and handles.rewrite is None


def test_variants_add_plan_and_rewrite_handles():
    case = _first("generation")
    assert PROTOCOL.build(case, PROTOCOL.parse_options({"reasoning": "plugin"})).handles.plan is not None
    rewritten = PROTOCOL.build(case, PROTOCOL.parse_options({"rewrite": "self"})).handles
    assert rewritten.rewrite is not None and rewritten.plan is None


def _run_all(options: Any, cache: Cache, spec: str) -> list[tuple[Any, CaseResult[Any]]]:
    runner = Runner(Bindings.from_specs(spec), cache, retry=RetryPolicy(max_attempts=1))

    async def run() -> list[tuple[Any, CaseResult[Any]]]:
        return [(case, await runner.run_graph(PROTOCOL.build(case, options))) for case in CASES]

    return anyio.run(run)


@pytest.mark.parametrize("pairs", VARIANTS)
def test_record_depends_on_node_ids_only_through_the_handles(tmp_path, pairs):
    """Every node renamed (keeping their order): the same record, failures and the node a reason
    names included. Some calls fail, so the inference and evaluation failure paths are read too."""
    options = PROTOCOL.parse_options(pairs)
    statuses = set()
    for case, result in _run_all(options, Cache(tmp_path), "sim/umm?error_rate=0.3"):
        assert isinstance(result.handles, AegisHandles)
        expected = PROTOCOL.record(case, result, options)
        names = {nid: f"n{i:03d}" for i, nid in enumerate(sorted(result))}
        other = CaseResult({names[nid]: dataclasses.replace(o, node=names[nid]) for nid, o in result.items()}, renamed(result.handles, names))
        got = PROTOCOL.record(case, other, options)
        detail = expected["detail"]
        for old, new in names.items():
            detail = detail.replace(f"node '{old}'", f"node '{new}'")
        assert got["detail"] == detail
        assert {k: v for k, v in got.items() if k not in ("nodes", "detail")} == {
            k: v for k, v in expected.items() if k not in ("nodes", "detail")
        }
        statuses.add(got["status"])
    assert "inference_failure" in statuses and len(statuses) >= 2  # a failure path and another outcome


def test_a_plain_mapping_of_outcomes_still_records(tmp_path):
    """Callers that pass a plain dict (no handles) get the handles of a fresh build."""
    options = PROTOCOL.parse_options({"reasoning": "plugin"})
    for case, result in _run_all(options, Cache(tmp_path), "sim/umm"):
        record = PROTOCOL.record(case, dict(result), options)
        assert record == PROTOCOL.record(case, result, options)
        assert record["status"] == "scored" and record["plan"]
