"""GIR-Bench's record reads outcomes through the typed handles `build` returned, not node ids."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from PIL import Image

from tests.support.handles import renamed
from umni.backends.bindings import Bindings
from umni.backends.contract import Backend
from umni.backends.roles import DETECT, EMBED, Detection
from umni.engine.runner import CaseJob, Runner
from umni.graph.graph import Graph
from umni.graph.outcomes import CaseResult
from umni.store.cache import Cache
from umni.util.spec import Spec
from umni_cases import bundled
from umni_graphs.girbench import PROTOCOL, GirOptions
from umni_graphs.girbench.graph import GirHandles


class CornerBoxes(Backend):
    """TEST ONLY: every label asked for, found once in the top-left corner."""

    provider = "test-corner"
    roles = frozenset({DETECT})

    async def detect(self, image: Image.Image, labels: Sequence[str]) -> list[Detection]:
        return [Detection(label, (0.0, 0.0, 4.0, 4.0), 0.9) for label in labels]


class MeanColour(Backend):
    """TEST ONLY: an image's mean colour and a constant, as its feature vector."""

    provider = "test-mean"
    roles = frozenset({EMBED})

    async def embed(self, images: Sequence[Image.Image]) -> np.ndarray:
        return np.array([[*np.asarray(im.convert("RGB"), dtype=np.float64).mean(axis=(0, 1)) / 255.0, 1.0] for im in images])


def run_bundled(tmp_path: Path, options: GirOptions) -> tuple[dict[str, Any], dict[str, CaseResult[GirHandles]]]:
    cases = {c.id: c for c in PROTOCOL.load(bundled("girbench"), options).cases}
    backends = dict(Bindings.from_specs("sim/umm").backends)
    backends.update(detect=CornerBoxes(Spec.parse("test-corner/a")), embed=MeanColour(Spec.parse("test-mean/a")))
    results: dict[str, CaseResult[GirHandles]] = {}

    def done(job: CaseJob, graph: Graph[Any], outcomes: Any) -> None:
        results[job.case_id] = outcomes

    jobs = [CaseJob(i, cid, lambda case=case: PROTOCOL.build(case, options)) for i, (cid, case) in enumerate(cases.items())]
    anyio.run(Runner(Bindings(backends), Cache(tmp_path)).run, jobs, done)
    return cases, results


def test_records_depend_on_node_ids_only_through_the_handles(tmp_path):
    options = GirOptions(features="embed", skip_roles="ocr")
    cases, results = run_bundled(tmp_path, options)
    assert {c.task for c in cases.values()} >= {"uni", "numerical", "spatial", "puzzle", "perception"}
    for cid, result in results.items():
        assert isinstance(result.handles, GirHandles), cid
        expected = PROTOCOL.record(cases[cid], result, options)
        names = {nid: f"n{i}" for i, nid in enumerate(sorted(result))}
        outcomes = {names[nid]: dataclasses.replace(o, node=names[nid]) for nid, o in result.items()}
        got = PROTOCOL.record(cases[cid], CaseResult(outcomes, renamed(result.handles, names)), options)
        assert {k: v for k, v in got.items() if k != "nodes"} == {k: v for k, v in expected.items() if k != "nodes"}, cid
    scored = [m for r in results for m in PROTOCOL.record(cases[r], results[r], options)["metrics"].values() if m["status"] == "scored"]
    assert len(scored) >= len(results)  # the property is checked on records that hold scores, not on failures


def test_a_failed_scoring_input_is_named_by_its_node_through_the_handles(tmp_path):
    """A detector that fails: the record names the detect node (found through `related`)."""

    class Broken(CornerBoxes):
        async def detect(self, image: Image.Image, labels: Sequence[str]) -> list[Detection]:
            raise ValueError("no boxes today")

    options = GirOptions(features="embed", skip_roles="ocr,embed", tasks="numerical")
    case = PROTOCOL.load(bundled("girbench"), options).cases[0]
    backends = dict(Bindings.from_specs("sim/umm").backends)
    backends["detect"] = Broken(Spec.parse("test-corner/broken"))
    result = anyio.run(Runner(Bindings(backends), Cache(tmp_path)).run_graph, PROTOCOL.build(case, options))
    entry = PROTOCOL.record(case, result, options)["metrics"]["numerical"]
    assert (entry["status"], entry["failure"], entry["node"]) == ("failed", "internal", "detect")
    assert "no boxes today" in entry["message"]
