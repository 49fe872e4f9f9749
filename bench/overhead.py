"""Benchmark 1 — engine overhead: what the runner costs per node when the backend costs nothing.

Many small cases of trivial nodes (answer nodes on a zero-latency backend, plus one compute node
per case that reads every answer) run through the real `Runner` with a real `Cache` and event log
in a temporary directory. The same backend calls are then made by a plain loop, awaited one after
another. The difference, divided by the node count, is the engine's overhead per node: scheduling,
cache keys, the cache write, the event log, retries bookkeeping.

Image nodes cost more (PNG encoding, hashing, a blob file, decoding for every consumer), so a
second, smaller part measures generate → edit → answer chains with a mid-sized image and reports
the per-node cost of that path separately; it has no target, it is there to show where time goes.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from umni.backends.bindings import Bindings
from umni.engine.runner import CaseJob, Runner
from umni.graph.graph import Graph
from umni.store.cache import Cache
from umni.store.runfolder import EVENTS_JSONL
from umni.util.events import EventLog

from .null_backend import NullBackend

OPTIONS = ["red", "green", "blue", "yellow"]
TARGET_US_PER_NODE = 300.0


def count_first_options(**answers: Any) -> int:
    """The compute node of every case: how many answers chose option 0."""
    return sum(1 for value in answers.values() if value == 0)


def _question(case: int, q: int) -> str:
    return f"case {case}: which colour is object {q}?"


def trivial_graph(case: int, answers: int) -> Graph:
    g = Graph(f"case-{case:06d}")
    refs = {f"a{q}": g.answer(f"q{q}", [_question(case, q)], OPTIONS) for q in range(answers)}
    g.compute("count", count_first_options, **refs)
    return g


def image_graph(case: int) -> Graph:
    g = Graph(f"img-{case:06d}")
    first = g.generate("draw", [f"picture number {case}"])
    second = g.edit("edit", first, f"change picture {case}")
    g.answer("q0", [second, f"question about picture {case}"], OPTIONS)
    g.answer("q1", [second, f"another question about picture {case}"], OPTIONS)
    return g


async def _engine(root: Path, backend: NullBackend, graphs: list[Graph], role_names: tuple[str, ...]) -> dict[str, float]:
    """Run the graphs twice on one cache: first every node computes, then every node is a cache hit."""
    cache = Cache(root / "cache")
    events = EventLog(root / EVENTS_JSONL)
    bindings = Bindings({role: backend for role in role_names})
    timings: dict[str, float] = {}
    try:
        for label in ("computed", "cached"):
            runner = Runner(bindings, cache, events=events)
            jobs = [CaseJob(i, g.case_id, lambda g=g: g) for i, g in enumerate(graphs)]
            wall, cpu = time.perf_counter(), time.process_time()
            stats = await runner.run(jobs)
            timings[f"{label}_wall"] = time.perf_counter() - wall
            timings[f"{label}_cpu"] = time.process_time() - cpu
            expected = sum(len(g.nodes) for g in graphs)
            # Compute nodes with equal inputs are equal work, so the first pass may already hit the
            # cache for some of them; what must hold is that nothing failed and the rerun calls nothing.
            done = stats.statuses["computed"] + stats.statuses["cached"]
            if done != expected or (label == "cached" and stats.statuses["cached"] != expected):
                raise RuntimeError(f"engine overhead run: expected {expected} {label} nodes, got {dict(stats.statuses)}")
    finally:
        events.close()
        cache.close()
    return timings


async def _direct_trivial(backend: NullBackend, cases: int, answers: int) -> float:
    started = time.perf_counter()
    for case in range(cases):
        values = {}
        for q in range(answers):
            reply = await backend.choose([_question(case, q)], OPTIONS)
            values[f"a{q}"] = reply.index
        count_first_options(**values)
    return time.perf_counter() - started


async def _direct_images(backend: NullBackend, cases: int) -> float:
    started = time.perf_counter()
    for case in range(cases):
        first = await backend.generate([f"picture number {case}"])
        second = await backend.edit([first.image], f"change picture {case}")
        await backend.choose([second.image, f"question about picture {case}"], OPTIONS)
        await backend.choose([second.image, f"another question about picture {case}"], OPTIONS)
    return time.perf_counter() - started


def _cache_write_cost(root: Path, writes: int) -> float:
    """Microseconds per `Cache.put` of an answer-sized record (real SQLite file, WAL, as runs use it)."""
    cache = Cache(root / "put-only")
    output = {"index": 0, "option": "red", "text": "red", "mode": "letter"}
    try:
        started = time.perf_counter()
        for i in range(writes):
            cache.put(f"{i:064x}", "answer", output)
        return (time.perf_counter() - started) / writes * 1e6
    finally:
        cache.close()


def _event_cost(root: Path, emits: int) -> float:
    events = EventLog(root / "emit-only.jsonl")
    try:
        started = time.perf_counter()
        for i in range(emits):
            events.emit("node.done", case="case-000001", node=f"q{i % 20}", role="understand", key="0" * 64, calls=1,
                        seconds=0.0012, backend="null/zero", usage={"input_tokens": 42, "output_tokens": 1, "images_in": 1})
        return (time.perf_counter() - started) / emits * 1e6
    finally:
        events.close()


def run(*, cases: int, answers_per_case: int, image_cases: int, image_side: int) -> dict[str, Any]:
    """Overhead per trivial node and per image node; see the module docstring."""
    with tempfile.TemporaryDirectory(prefix="umni-bench-overhead-") as tmp:
        root = Path(tmp)
        nodes = cases * (answers_per_case + 1)
        graphs = [trivial_graph(i, answers_per_case) for i in range(cases)]
        backend = NullBackend()
        direct = anyio.run(_direct_trivial, backend, cases, answers_per_case)
        engine = anyio.run(_engine, root / "trivial", backend, graphs, ("understand",))
        per_node_us = (engine["computed_wall"] - direct) / nodes * 1e6

        image_backend = NullBackend(image_side=image_side)
        image_graphs = [image_graph(i) for i in range(image_cases)]
        image_nodes = sum(len(g.nodes) for g in image_graphs)
        image_direct = anyio.run(_direct_images, image_backend, image_cases)
        image_engine = anyio.run(_engine, root / "images", image_backend, image_graphs, ("understand", "generate", "edit"))

        put_us = _cache_write_cost(root, min(nodes, 5000))
        emit_us = _event_cost(root, min(2 * nodes, 10000))
    return {
        "name": "engine_overhead",
        "title": "Engine overhead per node (zero-latency backend)",
        "params": {"cases": cases, "answers_per_case": answers_per_case, "nodes": nodes, "image_cases": image_cases, "image_side": image_side},
        "nodes": nodes,
        "engine_seconds": engine["computed_wall"],
        "engine_cpu_seconds": engine["computed_cpu"],
        "direct_seconds": direct,
        "overhead_us_per_node": per_node_us,
        "ratio_engine_to_direct": engine["computed_wall"] / direct,
        "cached_rerun_seconds": engine["cached_wall"],
        "cached_us_per_node": engine["cached_wall"] / nodes * 1e6,
        "cached_cpu_seconds": engine["cached_cpu"],
        "cached_cpu_us_per_node": engine["cached_cpu"] / nodes * 1e6,
        "engine_cpu_us_per_node": engine["computed_cpu"] / nodes * 1e6,
        "cache_put_us": put_us,
        "event_emit_us": emit_us,
        "image_nodes": image_nodes,
        "image_engine_seconds": image_engine["computed_wall"],
        "image_direct_seconds": image_direct,
        "image_overhead_us_per_node": (image_engine["computed_wall"] - image_direct) / image_nodes * 1e6,
        "image_cached_us_per_node": image_engine["cached_wall"] / image_nodes * 1e6,
        "target_us_per_node": TARGET_US_PER_NODE,
        "meets_target": per_node_us <= TARGET_US_PER_NODE,
    }
