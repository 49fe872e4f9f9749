"""Benchmark — umni beside inspect_ai on one call pattern.

Both engines run N samples; each sample makes K model calls one after another (every call sees the
previous reply, so they cannot overlap within a sample), every call waits L seconds, and at most C
calls are in flight. The model is the same in both: an in-process fake that sleeps L and returns a
short text. umni runs a graph of K chained ``respond`` nodes per case through its ``Runner`` with a
SQLite cache and an event log on disk; inspect_ai runs a ``Task`` whose solver calls ``generate`` K
times, with ``max_connections=C``, its own cache off and its log written to disk. No schedule beats
the ideal bound ``max(N·K·L / C, K·L)``.

inspect_ai's wall time depends on how many samples it admits at once, so it runs twice: with its
default ``max_samples`` and with ``max_samples=N`` (every sample admitted, the connection limit alone
bounding the calls). ``umni / inspect`` below 1 means umni finished first. CPU seconds (this process,
all threads) are measured beside each wall time; umni's CPU per node is held to ``CPU_TARGET`` of
inspect_ai's. inspect_ai is optional
(``pip install inspect-ai``); without it the benchmark says so and reports umni alone.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import anyio

from umni.backends.bindings import Bindings
from umni.backends.contract import Backend
from umni.backends.roles import UNDERSTAND, Part, TextReply, Usage
from umni.engine.runner import CaseJob, Runner
from umni.graph.graph import Graph
from umni.store.cache import Cache
from umni.store.runfolder import EVENTS_JSONL
from umni.util.events import EventLog
from umni.util.spec import Spec

#: umni's wall time within this factor of the ideal bound (the engine's scheduling target)
IDEAL_TARGET = 1.15
#: umni's CPU seconds per node at most this share of inspect_ai's on the same pattern
CPU_TARGET = 0.3


class SleepingModel(Backend):
    """Replies "ok" after ``latency`` seconds; counts its calls."""

    provider: ClassVar[str] = "bench-sleep"
    roles: ClassVar[frozenset[str]] = frozenset({UNDERSTAND})

    def __init__(self, latency: float) -> None:
        super().__init__(Spec.parse("bench-sleep/model"))
        self.latency = latency
        self.calls = 0

    async def respond(self, parts: Sequence[Part], *, max_tokens: int = 512, seed: int = 0) -> TextReply:
        self.calls += 1
        await anyio.sleep(self.latency)
        return TextReply(text="ok", usage=Usage(input_tokens=1, output_tokens=1))


def chain_graph(case: int, calls: int) -> Graph:
    """K respond nodes, each prompted with the previous reply."""
    g = Graph(f"case-{case}")
    previous = g.respond("call-0", f"sample {case}: step 0")
    for k in range(1, calls):
        previous = g.respond(f"call-{k}", [f"sample {case}: step {k} after", previous])
    return g


async def _umni(root: Path, samples: int, calls: int, latency: float, concurrency: int) -> dict[str, Any]:
    model = SleepingModel(latency)
    cache = Cache(root / "cache")
    events = EventLog(root / EVENTS_JSONL)
    try:
        runner = Runner(Bindings({UNDERSTAND: model}), cache, events=events, concurrency=concurrency)
        jobs = [CaseJob(i, f"case-{i}", lambda i=i: chain_graph(i, calls)) for i in range(samples)]
        started, cpu = time.perf_counter(), time.process_time()
        stats = await runner.run(jobs)
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    finally:
        events.close()
        cache.close()
    if stats.statuses["computed"] != samples * calls:
        raise RuntimeError(f"umni run: expected {samples * calls} computed nodes, got {dict(stats.statuses)}")
    return {"wall_seconds": wall, "cpu_seconds": cpu, "calls": model.calls}


def _inspect(root: Path, samples: int, calls: int, latency: float, concurrency: int, max_samples: int | None) -> dict[str, Any]:
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import GenerateConfig, ModelAPI, ModelOutput, get_model, modelapi
    from inspect_ai.solver import Generate, TaskState, solver

    @modelapi(name="umnibenchsleep")
    class SleepingAPI(ModelAPI):  # registered under a name inspect resolves from the model string
        def __init__(self, model_name: str, base_url: str | None = None, api_key: str | None = None,
                     config: GenerateConfig = GenerateConfig(), **_: Any) -> None:
            super().__init__(model_name, base_url, api_key, [], config)

        def max_connections(self) -> int:
            return concurrency

        async def generate(self, input: Any, tools: Any, tool_choice: Any, config: GenerateConfig) -> ModelOutput:
            await anyio.sleep(latency)
            return ModelOutput.from_content(model=self.model_name, content="ok")

    @solver
    def chained() -> Any:
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            for _ in range(calls):
                state = await generate(state)
            return state

        return solve

    task = Task(dataset=[Sample(input=f"sample {i}: step 0", id=i) for i in range(samples)], solver=chained())
    model = get_model("umnibenchsleep/model", config=GenerateConfig(max_connections=concurrency))
    options: dict[str, Any] = {"max_samples": max_samples} if max_samples is not None else {}
    started, cpu = time.perf_counter(), time.process_time()
    logs = eval(task, model=model, log_dir=str(root / "inspect-logs"), display="none", max_connections=concurrency, **options)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    replies = sum(m.role == "assistant" for sample in logs[0].samples or [] for m in sample.messages)
    if logs[0].status != "success" or replies != samples * calls:
        raise RuntimeError(f"inspect run: status {logs[0].status}, {replies} model replies of {samples * calls}")
    return {"wall_seconds": wall, "cpu_seconds": cpu, "calls": replies}


def run(*, samples: int, calls: int, latency: float, concurrency: int) -> dict[str, Any]:
    """umni and inspect_ai on the same pattern; see the module docstring."""
    ideal = max(samples * calls * latency / concurrency, calls * latency)
    with tempfile.TemporaryDirectory(prefix="umni-bench-inspect-") as tmp:
        root = Path(tmp)
        umni = anyio.run(_umni, root / "umni", samples, calls, latency, concurrency)
        result: dict[str, Any] = {
            "name": "inspect_compare",
            "title": "umni beside inspect_ai, same call pattern",
            "params": {"samples": samples, "calls_per_sample": calls, "latency_s": latency, "concurrency": concurrency},
            "ideal_seconds": ideal,
            "umni_seconds": umni["wall_seconds"],
            "umni_cpu_seconds": umni["cpu_seconds"],
            "umni_cpu_us_per_node": umni["cpu_seconds"] / (samples * calls) * 1e6,
            "umni_over_ideal": umni["wall_seconds"] / ideal,
            "ideal_target": IDEAL_TARGET,
            "meets_target": umni["wall_seconds"] / ideal <= IDEAL_TARGET,
        }
        try:
            import inspect_ai  # noqa: F401
        except ImportError:
            result["inspect"] = "inspect_ai is not installed (pip install inspect-ai): umni measured alone"
            return result
        runs = {}
        for label, max_samples in (("default max_samples", None), (f"max_samples={samples}", samples)):
            measured = _inspect(root / label.replace(" ", "-").replace("=", "-"), samples, calls, latency, concurrency, max_samples)
            runs[label] = {
                "inspect_seconds": measured["wall_seconds"],
                "inspect_over_ideal": measured["wall_seconds"] / ideal,
                "umni_over_inspect": umni["wall_seconds"] / measured["wall_seconds"],
                "inspect_cpu_seconds": measured["cpu_seconds"],
                "inspect_cpu_us_per_node": measured["cpu_seconds"] / (samples * calls) * 1e6,
                "umni_cpu_over_inspect": umni["cpu_seconds"] / measured["cpu_seconds"],
            }
        result["inspect"] = runs
        result["inspect_version"] = inspect_ai.__version__
        result["cpu_target"] = CPU_TARGET
        result["meets_target"] = result["meets_target"] and all(
            r["umni_over_inspect"] < 1 and r["umni_cpu_over_inspect"] <= CPU_TARGET for r in runs.values()
        )
        return result
