"""Benchmark 5 — local model batching: a tiny diffusers pipeline, micro-batched vs one at a time.

The pipeline is built from configs with random weights (the test suite's tiny Stable Diffusion
builder), saved to a temporary directory and loaded through the diffusers backend like any local
model. `umni_adapters.diffusion_bench.run_batching_benchmark` makes the same images both ways; the
device is the backend's default (CUDA when present), so this runs unchanged on a GPU machine.
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
from pathlib import Path
from typing import Any

from .repo import load_repo_module


def _tiny_builder() -> Any:
    return load_repo_module("tests/adapters/tiny_diffusers.py", "umni_bench_tiny_diffusers", "the batching benchmark")


def run(*, n: int, batch_size: int, steps: int, side: int) -> dict[str, Any]:
    title = f"Local batching: tiny SD pipeline, {n} images, batch {batch_size} vs 1"
    base = {"name": "local_batching", "title": title, "params": {"n": n, "batch_size": batch_size, "steps": steps, "side": side}}
    missing = [m for m in ("torch", "diffusers", "transformers") if importlib.util.find_spec(m) is None]
    if missing:
        return {**base, "skipped": f"not installed: {', '.join(missing)} (pip install -e '.[hf]')", "meets_target": None}
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the tiny pipeline is local; nothing may be downloaded
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    import diffusers.utils.logging
    import transformers.utils.logging

    diffusers.utils.logging.disable_progress_bar()
    diffusers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    transformers.utils.logging.set_verbosity_error()
    from umni_adapters.diffusion_bench import run_batching_benchmark

    with tempfile.TemporaryDirectory(prefix="umni-bench-batching-") as tmp:
        model = _tiny_builder().build_tiny_sd(Path(tmp) / "tiny-sd")
        figures = run_batching_benchmark(model, n, batch_size, params={"steps": steps, "width": side, "height": side})
    figures["model"] = "tiny-sd (random weights, built in a temp dir)"
    return {**base, **figures, "meets_target": None}
