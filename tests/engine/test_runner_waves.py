"""Cache reads in waves: the nodes that become ready together have their cache rows read in one
query, with the same statuses, outputs and events as reading them one at a time."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
from fakes import ScriptedBackend

from umni.backends.bindings import Bindings
from umni.engine.runner import CaseJob, Runner
from umni.graph.graph import Graph
from umni.store.cache import Cache
from umni.util.events import EventLog


def case(i: int) -> Graph:
    g = Graph(f"case-{i}")
    first = g.answer("q0", [f"case {i}: first?"], ["a", "b"])
    g.answer("q1", [f"case {i}: second?"], ["a", "b"])
    g.answer("same", ["a question every case asks"], ["a", "b"])  # one key in every case
    g.answer("after", ["follow-up to", first], ["a", "b"])
    return g


def run_cases(root: Path, cache: Cache, name: str, cases: int = 6) -> tuple[dict[str, dict[str, object]], list[dict[str, object]]]:
    backend = ScriptedBackend()
    events = EventLog(root / f"{name}.jsonl")
    results: dict[str, dict[str, object]] = {}
    try:
        runner = Runner(Bindings({"understand": backend}), cache, events=events)
        jobs = [CaseJob(i, f"case-{i}", lambda i=i: case(i)) for i in range(cases)]
        anyio.run(runner.run, jobs, lambda job, graph, outcomes: results.update(
            {f"{job.case_id}/{nid}": {"status": o.status, "output": o.output} for nid, o in outcomes.items()}))
    finally:
        events.close()
    lines = [json.loads(line) for line in (root / f"{name}.jsonl").read_text().splitlines()]
    return results, [{k: v for k, v in line.items() if k not in ("time", "seconds")} for line in lines]


def test_a_wave_of_cached_nodes_is_read_in_one_query(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "cache")
    try:
        computed, _ = run_cases(tmp_path, cache, "first")
        queries: list[str] = []
        cache.results.db.set_trace_callback(queries.append)
        cached, events = run_cases(tmp_path, cache, "second")
    finally:
        cache.close()
    reads = [q for q in queries if q.lstrip().upper().startswith("SELECT") and "FROM results" in q]
    # the roots of every admitted case in one wave, then every "after" node (released by the
    # first wave's hits) in a second: two queries for 24 nodes
    assert len(reads) == 2
    assert {k: v["status"] for k, v in cached.items()} == dict.fromkeys(computed, "cached")
    assert {k: v["output"] for k, v in cached.items()} == {k: v["output"] for k, v in computed.items()}
    outputs = [v["output"] for k, v in cached.items() if k.endswith("/same")]
    assert len({id(o) for o in outputs}) == len(outputs)  # nodes sharing a key still get their own output
    cached_events = sorted((e["case"], e["node"]) for e in events if e["event"] == "node.cached")
    assert cached_events == sorted(tuple(k.split("/")) for k in computed)


def test_every_node_is_reported_once_before_its_case_is_done(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "cache")
    try:
        run_cases(tmp_path, cache, "first", cases=3)
        _, events = run_cases(tmp_path, cache, "second", cases=3)
    finally:
        cache.close()
    for i in range(3):
        mine = [e for e in events if e.get("case") == f"case-{i}"]
        assert sorted(e["node"] for e in mine if e["event"] == "node.cached") == ["after", "q0", "q1", "same"]
        assert mine[-1] == {"event": "case.done", "case": f"case-{i}", "statuses": {"cached": 4}}
