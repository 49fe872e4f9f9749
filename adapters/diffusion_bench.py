"""Throughput of the diffusers backend with micro-batching against one request at a time.

The same ``n`` requests (same prompts and seeds) are made twice on one loaded pipeline: once
submitted together to a backend with ``batch_size`` (the batcher merges them into calls of up to
that size), once awaited one after another with ``batch_size=1``. Because every image has its own
seeded generator the two runs make the same images, which the result reports as a check.
Device and dtype are the backend's defaults (CUDA and bf16/fp16 when present) unless given in
``params``, so the function runs unchanged on a GPU machine.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from PIL import Image

from umni.plugin import GENERATE, Spec

from .diffusion import DiffusersBackend

_PROMPTS = (
    "a red cube on a wooden table",
    "a lighthouse on a cliff at dusk",
    "two cats sleeping on a blue sofa",
    "a bowl of lemons, studio lighting",
    "a snowy mountain road with a yellow car",
    "an old map with a compass rose",
)


def _spec(path: str | Path, batch_size: int, params: Mapping[str, Any]) -> Spec:
    pairs = {**{key: str(value) for key, value in params.items()}, "batch_size": str(batch_size)}
    query = "&".join(f"{key}={value}" for key, value in sorted(pairs.items()))
    return Spec.parse(f"diffusers/{path}?{query}")


async def measure_batching(
    path: str | Path,
    n: int,
    batch_size: int,
    *,
    params: Mapping[str, Any] | None = None,
    edit_image_size: tuple[int, int] = (512, 512),
) -> dict[str, Any]:
    """Async core of :func:`run_batching_benchmark`, for callers already inside an event loop."""
    if n < 1 or batch_size < 1:
        raise ValueError("n and batch_size must be at least 1")
    params = dict(params or {})
    batched = DiffusersBackend(_spec(path, batch_size, params))
    one_by_one = DiffusersBackend(_spec(path, 1, params))
    await batched.start()
    await one_by_one.start()
    generates = GENERATE in batched.fills()
    source = Image.fromarray(np.random.default_rng(0).integers(0, 256, (*edit_image_size[::-1], 3), dtype=np.uint8))
    jobs = [(_PROMPTS[i % len(_PROMPTS)], 1000 + i) for i in range(n)]

    async def make(backend: DiffusersBackend, prompt: str, seed: int) -> Image.Image:
        if generates:
            return (await backend.generate([prompt], seed=seed)).image
        return (await backend.edit([source], prompt, seed=seed)).image

    # Warm up both paths (first calls pay for kernel selection and allocator growth).
    await make(one_by_one, *jobs[0])
    await _run_together(make, batched, jobs[:batch_size])

    stats = batched.pipeline.batcher.stats
    calls_before = stats.calls
    started = time.perf_counter()
    sequential_images = [await make(one_by_one, prompt, seed) for prompt, seed in jobs]
    sequential_seconds = time.perf_counter() - started
    sequential_calls = stats.calls - calls_before

    calls_before = stats.calls
    started = time.perf_counter()
    batched_images = await _run_together(make, batched, jobs)
    batched_seconds = time.perf_counter() - started
    batched_calls = stats.calls - calls_before

    difference = max(
        int(np.abs(np.asarray(a, dtype=np.int16) - np.asarray(b, dtype=np.int16)).max())
        for a, b in zip(sequential_images, batched_images)
    )
    return {
        "model": batched.source.location,
        "pipeline": batched.source.class_name,
        "task": "generate" if generates else "edit",
        "device": batched.device,
        "dtype": batched.dtype,
        "n": n,
        "batch_size": batch_size,
        "sequential_seconds": sequential_seconds,
        "batched_seconds": batched_seconds,
        "sequential_images_per_second": n / sequential_seconds,
        "batched_images_per_second": n / batched_seconds,
        "speedup": sequential_seconds / batched_seconds,
        "sequential_calls": sequential_calls,
        "batched_calls": batched_calls,
        "max_pixel_difference": difference,
    }


async def _run_together(make: Any, backend: DiffusersBackend, jobs: list[tuple[str, int]]) -> list[Image.Image]:
    """Submit all jobs at once, as many in flight as the backend's concurrency allows (as the engine does)."""
    results: list[Image.Image | None] = [None] * len(jobs)
    limiter = anyio.CapacityLimiter(backend.concurrency)

    async def one(index: int, prompt: str, seed: int) -> None:
        async with limiter:
            results[index] = await make(backend, prompt, seed)

    async with anyio.create_task_group() as group:
        for index, (prompt, seed) in enumerate(jobs):
            group.start_soon(one, index, prompt, seed)
    return results  # type: ignore[return-value]


def run_batching_benchmark(
    path: str | Path,
    n: int,
    batch_size: int,
    *,
    params: Mapping[str, Any] | None = None,
    edit_image_size: tuple[int, int] = (512, 512),
) -> dict[str, Any]:
    """Images per second with micro-batching vs one request at a time, on the pipeline at ``path``.

    ``path`` is what follows ``diffusers/`` in a spec (local directory or hub repo); ``params`` adds
    spec parameters (``steps``, ``width``, ``height``, ``device``, ``dtype``, ...). Edit-only
    pipelines are measured on edits of a fixed noise image of ``edit_image_size``. The result also
    holds the pipeline call counts and ``max_pixel_difference`` between the two runs' images (0 or
    1 when batching leaves images unchanged).
    """
    return anyio.run(lambda: measure_batching(path, n, batch_size, params=params, edit_image_size=edit_image_size))
