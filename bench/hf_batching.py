"""Benchmark — local batching on every path: batch N vs batch 1 for each kind of model call.

Tiny random models (the test suite's builders, written to a temporary folder) are loaded through the
real `hf/<folder>` and `diffusers/<folder>` backends, and each workload runs the same N requests,
all started at once, twice in the same run: with ``batch_size=1`` (one model call each) and with
``batch_size=N`` (the micro-batcher joins them). Workloads:

- answers (greedy) and sampled answers (temperature 1, one seeded generator per row): tiny Janus;
- judges (option letter read from a short reply) and likelihood letters (one forward pass): Idefics3;
- detect (same labels, same image size): OWLv2; embed (one image per request): DINOv2;
- generate: Janus images; edit: InstructPix2Pix (diffusers).

Each figure is the fastest of ``REPEATS`` runs (wall seconds), with the CPU seconds of this process
for that run beside it: on a CPU a batch mostly saves per-call overhead, and CPU seconds show
whether the saving came from less work or from more threads. Results must match batched and alone
(text exactly; boxes, embeddings and pixels to rounding), and the report says whether they did.
On a GPU with real checkpoints the gain comes from filling the device and is larger; run
``bench/gpu_throughput.py`` there.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .repo import load_repo_module

#: Each figure is the fastest of this many runs, so other work on a shared machine counts less.
REPEATS = 3

_PROMPTS = ["a red cube", "a blue ball", "a red ball", "a blue cube"]


@dataclass(frozen=True)
class Workload:
    """One kind of request: the model folder, the spec query, and the call for request ``i``."""

    name: str
    provider: str
    folder: Path
    query: str
    call: Callable[[Any, int], Awaitable[Any]]


def _tiny(relative: str, name: str) -> Any:
    return load_repo_module(relative, name, "the hf batching benchmark")


def _noise(seed: int, size: tuple[int, int] = (32, 32)) -> Any:
    from PIL import Image

    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8), mode="RGB")


def _workloads(root: Path) -> list[Workload]:
    hf = _tiny("tests/adapters/tiny_hf.py", "umni_bench_tiny_hf")
    diffusers = _tiny("tests/adapters/tiny_diffusers.py", "umni_bench_tiny_diffusers")
    janus = hf.build_janus(root / "janus")
    idefics = hf.build_idefics3(root / "idefics3")
    owl = hf.build_owlv2(root / "owlv2")
    dino = hf.build_dinov2(root / "dinov2")
    ip2p = diffusers.build_tiny_ip2p(root / "ip2p")
    options = ["yes", "no", "unsure"]

    def prompt(i: int) -> str:
        return _PROMPTS[i % len(_PROMPTS)]

    async def answer(model: Any, i: int) -> Any:
        return (await model.respond([prompt(i)], max_tokens=8, seed=i)).text

    async def judge(model: Any, i: int) -> Any:
        reply = await model.choose([_noise(i), f"Is this {prompt(i)}?"], options, seed=i)
        return reply.index, reply.text

    async def detect(model: Any, i: int) -> Any:
        # Boxes and scores only: random OWLv2 weights score both labels 0.5 on many boxes, and which
        # label wins such a tie is rounding (tests/families/test_batching.py allows for it).
        return [(d.box, d.score) for d in await model.detect(_noise(i), ["red cube", "dog"])]

    async def embed(model: Any, i: int) -> Any:
        return await model.embed([_noise(i)])

    async def generate(model: Any, i: int) -> Any:
        return np.asarray((await model.generate([prompt(i)], seed=i)).image)

    async def edit(model: Any, i: int) -> Any:
        return np.asarray((await model.edit([_noise(i)], f"make it {prompt(i)}", seed=i)).image)

    return [
        Workload("answers", "hf", janus, "", answer),
        Workload("sampled answers", "hf", janus, "temperature=1", answer),
        Workload("judges (letter)", "hf", idefics, "", judge),
        Workload("likelihood letters", "hf", idefics, "mode=likelihood", judge),
        Workload("detect", "hf", owl, "threshold=0", detect),
        Workload("embed", "hf", dino, "", embed),
        Workload("generate", "hf", janus, "", generate),
        Workload("edit", "diffusers", ip2p, "steps=2", edit),
    ]


def run(*, n: int, batch_size: int) -> dict[str, Any]:
    title = f"local batching on every path: tiny models, {n} requests per workload, batch {batch_size} vs 1"
    base = {"name": "hf_batching", "title": title, "params": {"n": n, "batch_size": batch_size}}
    missing = [m for m in ("torch", "transformers", "diffusers") if importlib.util.find_spec(m) is None]
    if missing:
        return {**base, "skipped": f"not installed: {', '.join(missing)} (pip install -e '.[hf]')", "meets_target": None}
    _quiet()
    figures: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="umni-bench-hf-") as tmp:
        for workload in _workloads(Path(tmp)):
            print(f"hf_batching: {workload.name} ...", file=sys.stderr, flush=True)
            one, one_results = _measure(workload, n, 1)
            many, many_results = _measure(workload, n, batch_size)
            figures[workload.name] = {
                "batch_1": one, f"batch_{batch_size}": many,
                "speedup": one["wall_seconds"] / many["wall_seconds"],
                "cpu_ratio": one["cpu_seconds"] / max(many["cpu_seconds"], 1e-9),
                "same_results": _same(one_results, many_results),
            }
    same = all(f["same_results"] for f in figures.values())
    answers, images = figures["answers"], figures["generate"]
    return {
        **base,
        "device": "cpu" if not _cuda() else "cuda",
        "workloads": figures,
        # kept for the summary rows of bench/run.py
        "sequential": {"answers_per_second": n / answers["batch_1"]["wall_seconds"],
                       "images_per_second": n / images["batch_1"]["wall_seconds"]},
        "batched": {"answers_per_second": n / answers[f"batch_{batch_size}"]["wall_seconds"],
                    "images_per_second": n / images[f"batch_{batch_size}"]["wall_seconds"]},
        "answers_speedup": answers["speedup"],
        "images_speedup": images["speedup"],
        "identical_replies": same,
        "model": "tiny Janus, Idefics3, OWLv2, DINOv2, InstructPix2Pix (random weights, built in a temp dir)",
        "machine_note": "tiny models on this machine's CPU unless a GPU is present",
        "meets_target": same,
    }


def _quiet() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    import diffusers.utils.logging
    import transformers.utils.logging

    for logging in (transformers.utils.logging, diffusers.utils.logging):
        logging.disable_progress_bar()
        logging.set_verbosity_error()


def _cuda() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def _measure(workload: Workload, n: int, batch_size: int) -> tuple[dict[str, Any], list[Any]]:
    """Fastest wall time of REPEATS runs of n concurrent requests, with that run's CPU seconds."""
    import anyio

    from umni.util.spec import Spec
    from umni_adapters.diffusion import DiffusersBackend
    from umni_adapters.hf import HFBackend

    query = "&".join(q for q in (workload.query, f"batch_size={batch_size}") if q)
    spec = Spec.parse(f"{workload.provider}/{workload.folder}?{query}")
    model = HFBackend(spec) if workload.provider == "hf" else DiffusersBackend(spec)
    anyio.run(model.start)

    async def all_at_once() -> list[Any]:
        results: list[Any] = [None] * n

        async def one(i: int) -> None:
            results[i] = await workload.call(model, i)

        async with anyio.create_task_group() as group:
            for i in range(n):
                group.start_soon(one, i)
        return results

    anyio.run(all_at_once)  # warm-up: first calls pay for lazy initialisation
    best: tuple[float, float] = (float("inf"), 0.0)
    results: list[Any] = []
    for _ in range(REPEATS):
        wall, cpu = time.perf_counter(), time.process_time()
        results = anyio.run(all_at_once)
        timing = (time.perf_counter() - wall, time.process_time() - cpu)
        best = min(best, timing)
    return {"wall_seconds": best[0], "cpu_seconds": best[1], "per_second": n / best[0]}, results


def _same(left: list[Any], right: list[Any]) -> bool:
    """Equal text and labels; numbers (boxes, scores, embeddings, pixels) equal to rounding."""
    if isinstance(left, np.ndarray) or isinstance(right, np.ndarray):
        a, b = np.asarray(left, dtype=float), np.asarray(right, dtype=float)
        return a.shape == b.shape and bool(np.allclose(a, b, atol=1.0 if a.max(initial=0) > 2 else 1e-4))
    if isinstance(left, (list, tuple)) and isinstance(right, (list, tuple)):
        return len(left) == len(right) and all(_same(x, y) for x, y in zip(left, right))
    if isinstance(left, float) and isinstance(right, float):
        return abs(left - right) <= 1e-4
    return bool(left == right)


def main() -> None:
    import argparse
    import json

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=8)
    args = parser.parse_args()
    result = run(n=args.n, batch_size=args.batch_size)
    if "workloads" not in result:
        print(json.dumps(result, indent=2))
        return
    print(f"{result['title']} ({result['device']})")
    print(f"{'workload':<20} {'wall b1':>8} {'wall bN':>8} {'speedup':>8} {'cpu b1':>8} {'cpu bN':>8}  same")
    for name, f in result["workloads"].items():
        one, many = f["batch_1"], f[f"batch_{args.batch_size}"]
        print(f"{name:<20} {one['wall_seconds']:8.3f} {many['wall_seconds']:8.3f} {f['speedup']:7.2f}x "
              f"{one['cpu_seconds']:8.3f} {many['cpu_seconds']:8.3f}  {f['same_results']}")


if __name__ == "__main__":
    main()
