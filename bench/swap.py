"""Benchmark 3 — module-swap reuse: rebind one role and only that role's nodes run again.

A first run evaluates UmniBench with ``sim/umm`` in every role. A second run into a new directory,
on the same cache, rebinds only ``understand`` (to a sim with a different skill, so its answers
differ). Generate and edit nodes have the same keys as before, so the second run must make no
generate or edit call at all; its wall time shows what that saves.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from umni.run.evaluation import RunRequest, evaluate

from .cases import write_cases


def run(*, cases: int, latency: float, concurrency: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="umni-bench-swap-") as tmp:
        root = Path(tmp)
        cases_path = write_cases(root / "cases.jsonl", cases)
        model = f"sim/umm?latency={latency:g}"
        swapped = f"understand=sim/umm?latency={latency:g}&skill=0.5"
        common = dict(protocol="umnibench", cases=cases_path, cache=root / "cache", concurrency=concurrency, progress=False)
        began = time.perf_counter()
        first = evaluate(RunRequest(out=root / "first", model=model, **common))
        first_wall = time.perf_counter() - began
        began = time.perf_counter()
        second = evaluate(RunRequest(out=root / "second", model=model, roles=[swapped], **common))
        second_wall = time.perf_counter() - began
    calls = second.summary.calls
    image_calls = calls.get("generate", 0) + calls.get("edit", 0)
    return {
        "name": "module_swap",
        "title": f"Module swap: rerun with only understand rebound ({cases} cases, L={latency:g}s, C={concurrency})",
        "params": {"cases": cases, "latency_s": latency, "concurrency": concurrency, "rebound": swapped},
        "first_calls": first.summary.calls,
        "second_calls": calls,
        "second_generate_edit_calls": image_calls,
        "second_cached_nodes": second.summary.counts.cached,
        "first_seconds": first_wall,
        "second_seconds": second_wall,
        "second_over_first": second_wall / first_wall,
        "meets_target": image_calls == 0,
    }
