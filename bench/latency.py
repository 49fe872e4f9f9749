"""Benchmark 2 — latency hiding: UmniBench against a backend that takes a fixed time per call.

The engine runs N cases with at most C calls in flight; each call waits L seconds. No schedule can
beat max(total calls × L / C, critical path × L), the *ideal bound*, where the critical path is the
longest chain of backend calls one case must make in order (for UmniBench: generate → edit → edit →
answer, 4 calls). The baseline is the straightforward script: for each case, generate, answer three
questions, edit, answer three, edit, answer three, each call awaited before the next.

Two backends: ``sim/umm?latency=L`` in process, and the OpenAI-compatible HTTP backend talking to a
real local server (the test suite's stub server, started on 127.0.0.1 with the same latency), so
the second figure includes sockets, HTTP and JSON/base64 image transport. The server runs in its
own process (see ``stub_server``), as a model server would.

The baseline is timed on the first ``naive_cases`` cases and scaled to N: a loop that awaits one
call at a time takes time in proportion to its calls, and timing all N would take C times longer
than the run it is compared with.

Each timed run follows a warm-up run of ``WARMUP_CASES`` other cases (their own instructions, run
directory and cache, and for ``sim`` another seed, so no result and no drawing carries over) in the
same process, as in a long-lived process: the first run of a process also pays for importing the
report and viewer modules (compiled from source where bytecode is not written, as on this
machine), loading fonts and warming the server, which says nothing about hiding latency.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from umni.graph.graph import Graph
from umni.protocols.protocol import get_protocol
from umni.run.evaluation import RunRequest, evaluate
from umni.util.spec import Spec

from .cases import write_cases
from .stub_server import stub_server

WALL_TARGET = 1.2  # wall time within 1.2x of the ideal bound
WARMUP_CASES = 2
SPEEDUP_TARGET = 0.8  # at least 0.8 x C times faster than the naive loop

CALL_KINDS = frozenset({"generate", "edit", "answer", "respond", "judge", "tool"})


def critical_path(graph: Graph) -> int:
    """The most backend calls any chain of dependent nodes makes (compute nodes call nothing)."""
    depth: dict[str, int] = {}
    for nid in graph.validate():
        node = graph.nodes[nid]
        before = max((depth[up] for up in node.upstream()), default=0)
        depth[nid] = before + (1 if node.kind in CALL_KINDS else 0)
    return max(depth.values(), default=0)


async def naive_seconds_per_case(backend: Any, cases: list[Any]) -> float:
    """The official-script way: every call of every case awaited in turn, backend methods called directly."""
    start = getattr(backend, "start", None)
    if start is not None:
        await start()
    try:
        began = time.perf_counter()
        for case in cases:
            image = None
            for stage in ("generation", "interaction", "counterfactual"):
                spec = getattr(case, stage)
                if image is None:
                    image = (await backend.generate([spec.instruction])).image
                else:
                    image = (await backend.edit([image], spec.instruction)).image
                for question in spec.questions:
                    await backend.choose([image, question.text], question.options)
        return (time.perf_counter() - began) / len(cases)
    finally:
        await backend.aclose()


def _measure(
    label: str,
    spec: str,
    make_backend: Callable[[], Any],
    root: Path,
    cases_path: Path,
    n: int,
    latency: float,
    concurrency: int,
    naive_cases: int,
) -> dict[str, Any]:
    protocol = get_protocol("umnibench")
    options = protocol.parse_options({})
    cases = protocol.load(cases_path, options).cases
    path_len = critical_path(protocol.build(cases[0], options))
    warmup_spec = f"{spec}&seed=1" if label == "sim" else spec
    evaluate(RunRequest(
        protocol="umnibench", cases=write_cases(root / f"warmup-{label}.jsonl", WARMUP_CASES, tag="Warm-up"),
        out=root / f"warmup-run-{label}", cache=root / f"warmup-cache-{label}", model=warmup_spec,
        concurrency=concurrency, progress=False,
    ))
    request = RunRequest(
        protocol="umnibench", cases=cases_path, out=root / f"run-{label}", cache=root / f"cache-{label}",
        model=spec, concurrency=concurrency, progress=False,
    )
    wall, cpu = time.perf_counter(), time.process_time()
    result = evaluate(request)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    summary = result.summary
    calls = sum(summary.calls.values())
    failed = sum(v for k, v in summary.failures.items())
    ideal = max(calls * latency / concurrency, path_len * latency)
    naive_per_case = anyio.run(naive_seconds_per_case, make_backend(), cases[:naive_cases])
    naive = naive_per_case * n
    speedup = naive / wall
    return {
        "backend": label,
        "spec": spec,
        "cases": n,
        "latency_s": latency,
        "concurrency": concurrency,
        "calls": calls,
        "failed_nodes": failed,
        "critical_path_calls": path_len,
        "wall_seconds": wall,
        "process_cpu_seconds": cpu,
        "ideal_seconds": ideal,
        "wall_over_ideal": wall / ideal,
        "naive_cases_timed": min(naive_cases, n),
        "naive_seconds": naive,
        "speedup_over_naive": speedup,
        "meets_wall_target": wall / ideal <= WALL_TARGET,
        "meets_speedup_target": speedup >= SPEEDUP_TARGET * concurrency,
    }


def run(*, cases: int, latency: float, concurrency: int, naive_cases: int, http: bool = True) -> dict[str, Any]:
    """Engine against ideal bound and naive loop, for sim (in process) and, if asked, the HTTP backend."""
    from umni_adapters.openai_http import OpenAIBackend
    from umni_adapters.sim import SimBackend

    results = []
    with tempfile.TemporaryDirectory(prefix="umni-bench-latency-") as tmp:
        root = Path(tmp)
        cases_path = write_cases(root / "cases.jsonl", cases)
        sim_spec = f"sim/umm?latency={latency:g}"
        results.append(
            _measure("sim", sim_spec, lambda: SimBackend(Spec.parse(sim_spec)), root, cases_path, cases, latency, concurrency, naive_cases)
        )
        if http:
            with stub_server(latency) as server:
                http_spec = f"openai/bench-umm?base_url={server.base_url}&concurrency={concurrency}"
                results.append(
                    _measure(
                        "openai-http", http_spec, lambda: OpenAIBackend(Spec.parse(http_spec)), root, cases_path, cases,
                        latency, concurrency, naive_cases,
                    )
                )
            # CPU the server process used over both the engine run and the naive loop
            results[-1]["server_cpu_seconds"] = server.cpu_seconds
    return {
        "name": "latency_hiding",
        "title": f"Latency hiding: UmniBench, {cases} cases, L={latency:g}s per call, C={concurrency}",
        "params": {"cases": cases, "latency_s": latency, "concurrency": concurrency, "naive_cases": naive_cases},
        "runs": results,
        "wall_target": f"wall <= {WALL_TARGET} x ideal",
        "speedup_target": f"speedup >= {SPEEDUP_TARGET} x C = {SPEEDUP_TARGET * concurrency:g}",
        "meets_target": all(r["meets_wall_target"] and r["meets_speedup_target"] for r in results),
    }
