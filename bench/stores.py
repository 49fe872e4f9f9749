"""Benchmark — the result store: cost per node on SQLite and on PostgreSQL.

The engine-overhead workload (cases of trivial answer nodes plus one compute node, on a zero-latency
in-process backend) runs through the real `Runner` twice per store: every node computed (one stored
result each), then every node a cache hit. PostgreSQL is a server started for the benchmark on
127.0.0.1 with its default durability (fsync on), from Debian's binaries (as the tests do); without
them the PostgreSQL half is reported as skipped. Also measured per store: one `put_if_absent`
awaited alone (a commit per result: the worst case) and in a burst of concurrent writes (what the
runner produces: the writer batches them into few commits), and one `get`.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from umni.backends.bindings import Bindings
from umni.engine.runner import CaseJob, Runner
from umni.graph.graph import Graph
from umni.store.cache import Cache

from .null_backend import NullBackend
from .overhead import trivial_graph

_ROOT = Path(__file__).resolve().parents[1]


def _server() -> Any:
    sys.path.insert(0, str(_ROOT / "tests" / "stores"))
    from pg_server import PostgresServer

    return PostgresServer(durable=True).start()


def _builder(graph: Graph) -> Callable[[], Graph]:
    return lambda: graph


async def _engine(cache: Cache, graphs: list[Graph]) -> dict[str, float]:
    bindings = Bindings({"understand": NullBackend()})
    nodes = sum(len(g.nodes) for g in graphs)
    timings: dict[str, float] = {}
    for label in ("computed", "cached"):
        runner = Runner(bindings, cache)
        jobs = [CaseJob(i, g.case_id, _builder(g)) for i, g in enumerate(graphs)]
        started = time.perf_counter()
        stats = await runner.run(jobs)
        timings[f"{label}_us_per_node"] = (time.perf_counter() - started) / nodes * 1e6
        if stats.statuses["computed"] + stats.statuses["cached"] != nodes:
            raise RuntimeError(f"store benchmark: nodes did not all finish: {dict(stats.statuses)}")
    return timings


async def _operations(cache: Cache, writes: int) -> dict[str, float]:
    output = {"index": 0, "option": "red", "text": "red", "mode": "letter"}
    started = time.perf_counter()
    for i in range(writes):
        await cache.store(f"single-{i:060x}", "answer", output)
    single = (time.perf_counter() - started) / writes * 1e6
    started = time.perf_counter()
    await asyncio.gather(*(cache.store(f"burst-{i:060x}", "answer", output) for i in range(writes * 10)))
    burst = (time.perf_counter() - started) / (writes * 10) * 1e6
    started = time.perf_counter()
    for i in range(writes):
        await cache.lookup(f"single-{i:060x}")
    get = (time.perf_counter() - started) / writes * 1e6
    return {"put_alone_us": single, "put_in_burst_us": burst, "get_us": get}


def _measure(location: str, blobs: Path, graphs: list[Any], writes: int) -> dict[str, float]:
    cache = Cache(location, blobs=blobs)
    try:
        figures = asyncio.run(_engine(cache, graphs))
        figures.update(asyncio.run(_operations(cache, writes)))
        figures["commits"] = float(cache.results.commits)  # type: ignore[attr-defined]
        return figures
    finally:
        cache.close()


def run(*, cases: int, answers_per_case: int, writes: int) -> dict[str, Any]:
    graphs = [trivial_graph(i, answers_per_case) for i in range(cases)]
    nodes = sum(len(g.nodes) for g in graphs)
    result: dict[str, Any] = {
        "name": "stores",
        "params": {"cases": cases, "answers_per_case": answers_per_case, "nodes": nodes, "writes": writes},
        "meets_target": None,
    }
    with tempfile.TemporaryDirectory(prefix="umni-bench-stores-") as tmp:
        root = Path(tmp)
        result["sqlite"] = _measure(f"sqlite://{root / 'sqlite'}", root / "blobs", graphs, writes)
        try:
            server = _server()
        except RuntimeError as exc:
            result["postgresql"] = f"skipped: {exc}"
            return result
        try:
            result["postgresql"] = _measure(server.create_database("bench"), root / "blobs", graphs, writes)
        finally:
            server.stop()
    pg, lite = result["postgresql"], result["sqlite"]
    result["postgres_over_sqlite_computed"] = pg["computed_us_per_node"] / lite["computed_us_per_node"]
    result["postgres_over_sqlite_cached"] = pg["cached_us_per_node"] / lite["cached_us_per_node"]
    return result
