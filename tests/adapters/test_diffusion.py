"""The diffusers backend on tiny random pipelines saved to disk and loaded by path.

Everything runs offline: Stable Diffusion and InstructPix2Pix pipelines with a few thousand random
weights are built from configs, written with ``save_pretrained`` and loaded through the
``diffusers/<path>`` spec, the same way a downloaded model is. Images are 32x32 and two steps.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import anyio
import numpy as np
import pytest
from PIL import Image

from tests.adapters.tiny_diffusers import (
    DEFAULT_SIDE,
    backend,
    build_tiny_ip2p,
    build_tiny_sd,
    concurrently,
    pixels,
    png,
    started,
)
from umni.backends.roles import EDIT, GENERATE, Editor, Generator
from umni.util.errors import BackendError, ConfigError
from umni.util.spec import Spec
from umni_adapters.batching import MicroBatcher
from umni_adapters.diffusion import DiffusersBackend, pipeline_kind

pytest.importorskip("diffusers")


# -- fixtures and helpers ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("diffusers")
    return {"sd": build_tiny_sd(root / "tiny-sd"), "ip2p": build_tiny_ip2p(root / "tiny-ip2p")}


def noise_image(seed: int, side: int = DEFAULT_SIDE) -> Image.Image:
    return Image.fromarray(np.random.default_rng(seed).integers(0, 256, (side, side, 3), dtype=np.uint8))


class CallSpy:
    """Stands in front of a real pipeline, counting calls and their batch sizes, then delegates."""

    def __init__(self, pipe: Any) -> None:
        self.pipe = pipe
        self.batch_sizes: list[int] = []

    def __call__(self, **kwargs: Any) -> Any:
        prompt = kwargs["prompt"]
        self.batch_sizes.append(len(prompt) if isinstance(prompt, list) else 1)
        return self.pipe(**kwargs)


def spying(made: DiffusersBackend) -> CallSpy:
    spy = CallSpy(made.pipeline.pipe)
    made.pipeline.pipe = spy
    return spy


def unspy(made: DiffusersBackend) -> None:
    pipe = made.pipeline.pipe
    if isinstance(pipe, CallSpy):
        made.pipeline.pipe = pipe.pipe


def generate_all(made: DiffusersBackend, jobs: Sequence[tuple[str, int]]) -> list[Any]:
    """Run the jobs as concurrent requests (as the engine's task group would): images or errors."""
    calls = [lambda p=prompt, s=seed: made.generate([p], seed=s) for prompt, seed in jobs]
    return [r if isinstance(r, BackendError) else r.image for r in concurrently(calls, catch=(BackendError,))]


def generate_one(made: DiffusersBackend, prompt: str, seed: int) -> Image.Image:
    async def main() -> Image.Image:
        return (await made.generate([prompt], seed=seed)).image

    return anyio.run(main)


JOBS = [("a red cube", 11), ("the blue sky over the sea", 22), ("an apple", 33)]


# -- generation --------------------------------------------------------------------------------------


def test_generate_makes_rgb_images_of_the_default_and_requested_size(models: dict[str, Path]) -> None:
    made = started(models["sd"], steps=2)
    assert isinstance(made, Generator)
    reply = anyio.run(lambda: made.generate(["a red cube", noise_image(0), "on a table"], seed=1))
    assert reply.image.mode == "RGB" and reply.image.size == (DEFAULT_SIDE, DEFAULT_SIDE)
    assert reply.usage.images_out == 1
    wide = started(models["sd"], steps=2, width=48, height=32)
    assert generate_one(wide, "a red cube", 1).size == (48, 32)


def test_same_seed_gives_the_same_png_and_another_seed_another(models: dict[str, Path]) -> None:
    made = started(models["sd"], steps=2)
    first = png(generate_one(made, "a red cube", 5))
    assert png(generate_one(made, "a red cube", 5)) == first
    assert png(generate_one(made, "a red cube", 6)) != first
    # A fresh backend instance (sharing the loaded pipeline) reproduces it too.
    assert png(generate_one(started(models["sd"], steps=2), "a red cube", 5)) == first


def test_a_batched_image_equals_the_same_image_made_alone(models: dict[str, Path]) -> None:
    alone_backend = started(models["sd"], steps=2, batch_size=1)
    alone = [generate_one(alone_backend, prompt, seed) for prompt, seed in JOBS]
    batched_backend = started(models["sd"], steps=2, batch_size=3)
    spy = spying(batched_backend)
    try:
        batched = generate_all(batched_backend, JOBS)
    finally:
        unspy(batched_backend)
    assert spy.batch_sizes == [3]  # really one call with three prompts
    for made_alone, made_batched in zip(alone, batched):
        # Exact on the CPUs tried; one grey level allowed for batch-size dependent float kernels.
        assert np.abs(pixels(made_alone) - pixels(made_batched)).max() <= 1
    assert len({png(image) for image in batched}) == 3  # three different images, not one repeated


def test_micro_batching_merges_only_compatible_requests_up_to_batch_size(models: dict[str, Path]) -> None:
    pairs = started(models["sd"], steps=2, batch_size=2)
    spy = spying(pairs)
    try:
        generate_all(pairs, [(f"prompt {i}", i) for i in range(5)])
    finally:
        unspy(pairs)
    assert spy.batch_sizes == [2, 2, 1]
    assert pairs.pipeline.batcher.stats.sizes[-3:] == [2, 2, 1]

    single = started(models["sd"], steps=2, batch_size=1)
    spy = spying(single)
    try:
        generate_all(single, JOBS)
    finally:
        unspy(single)
    assert spy.batch_sizes == [1, 1, 1]

    # Two backends on the same loaded pipeline but different step counts must not share a call.
    two_steps, three_steps = started(models["sd"], steps=2, batch_size=4), started(models["sd"], steps=3, batch_size=4)
    assert two_steps.pipeline is three_steps.pipeline
    spy = spying(two_steps)
    try:

        async def main() -> None:
            async with anyio.create_task_group() as group:
                for seed in range(2):
                    group.start_soon(lambda s=seed: two_steps.generate(["x"], seed=s))
                    group.start_soon(lambda s=seed: three_steps.generate(["x"], seed=s))

        anyio.run(main)
    finally:
        unspy(two_steps)
    assert sorted(spy.batch_sizes) == [2, 2]


# -- editing -----------------------------------------------------------------------------------------


def edit_all(made: DiffusersBackend, jobs: Sequence[tuple[Image.Image, str, int]]) -> list[Image.Image]:
    calls = [lambda i=image, t=instruction, s=seed: made.edit([i], t, seed=s) for image, instruction, seed in jobs]
    return [reply.image for reply in concurrently(calls)]


def test_edit_keeps_size_is_deterministic_and_batch_independent(models: dict[str, Path]) -> None:
    jobs = [(noise_image(1), "make it red", 7), (noise_image(2), "add a hat", 8), (noise_image(3), "night", 9)]
    alone_backend = started(models["ip2p"], steps=2, batch_size=1, image_guidance=1.5)
    assert isinstance(alone_backend, Editor)
    alone = [edit_all(alone_backend, [job])[0] for job in jobs]
    assert all(image.size == (DEFAULT_SIDE, DEFAULT_SIDE) and image.mode == "RGB" for image in alone)
    assert png(edit_all(alone_backend, [jobs[0]])[0]) == png(alone[0])

    batched_backend = started(models["ip2p"], steps=2, batch_size=3, image_guidance=1.5)
    spy = spying(batched_backend)
    try:
        batched = edit_all(batched_backend, jobs)
        # Inputs of different sizes cannot share a call.
        edit_all(batched_backend, [(noise_image(4, side=32), "a", 1), (noise_image(5, side=40), "b", 2)])
    finally:
        unspy(batched_backend)
    assert spy.batch_sizes == [3, 1, 1]
    for made_alone, made_batched in zip(alone, batched):
        assert np.abs(pixels(made_alone) - pixels(made_batched)).max() <= 1


def test_pipeline_failures_become_backend_errors(models: dict[str, Path]) -> None:
    made = started(models["sd"], steps=1001)  # more steps than the scheduler's 1000 training steps
    with pytest.raises(BackendError) as failure:
        generate_one(made, "x", 1)
    assert failure.value.retryable is False
    assert "StableDiffusionPipeline failed: ValueError" in str(failure.value)
    assert "1001" in str(failure.value)


class _RaisesOutOfMemory:
    def __call__(self, **kwargs: Any) -> Any:
        raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")


def test_out_of_memory_is_retryable_and_shrinks_later_batches(models: dict[str, Path]) -> None:
    made = started(models["sd"], steps=2, batch_size=4)
    real = made.pipeline.pipe
    made.pipeline.pipe = _RaisesOutOfMemory()
    try:
        failures = generate_all(made, [("a", 1), ("b", 2), ("c", 3), ("d", 4)])
    finally:
        made.pipeline.pipe = real
        cap, made.pipeline.batcher.cap = made.pipeline.batcher.cap, None
    assert all(isinstance(failure, BackendError) and failure.retryable for failure in failures)
    assert "out of memory on a batch of 4" in str(failures[0])
    assert cap == 2


# -- configuration -----------------------------------------------------------------------------------


def test_missing_path_and_unservable_class_are_config_errors(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    with pytest.raises(ConfigError, match="no-such-model"):
        backend(missing)
    with pytest.raises(ConfigError, match="model_index.json"):
        backend(tmp_path)
    (tmp_path / "model_index.json").write_text(json.dumps({"_class_name": "StableDiffusionControlNetPipeline"}))
    with pytest.raises(ConfigError) as unservable:
        backend(tmp_path)
    message = str(unservable.value)
    assert "StableDiffusionControlNetPipeline" in message
    assert "StableDiffusionPipeline" in message and "FluxKontextPipeline" in message


def test_an_uncached_hub_repo_fails_in_the_constructor_when_offline() -> None:
    from huggingface_hub import constants

    if not constants.HF_HUB_OFFLINE:
        pytest.skip("needs HF_HUB_OFFLINE=1 set before huggingface_hub is imported")
    with pytest.raises(ConfigError, match="umni-tests/no-such-pipeline"):
        DiffusersBackend(Spec.parse("diffusers/umni-tests/no-such-pipeline?steps=2"))


def test_bad_parameters_are_config_errors(models: dict[str, Path]) -> None:
    with pytest.raises(ConfigError, match="unknown parameter"):
        backend(models["sd"], sampler="euler")
    with pytest.raises(ConfigError, match="steps"):
        backend(models["sd"], steps=0)
    with pytest.raises(ConfigError, match="image_guidance"):
        backend(models["sd"], image_guidance=1.5)
    with pytest.raises(ConfigError, match="dtype"):
        backend(models["sd"], dtype="int8")
    with pytest.raises(ConfigError, match="width"):  # InstructPix2Pix keeps the input size
        started(models["ip2p"], width=32)


def write_index(directory: Path, class_name: str) -> Path:
    directory.mkdir()
    (directory / "model_index.json").write_text(json.dumps({"_class_name": class_name}))
    return directory


def test_roles_follow_the_pipeline_class(models: dict[str, Path], tmp_path: Path) -> None:
    assert backend(models["sd"]).fills() == {GENERATE}
    assert backend(models["ip2p"]).fills() == {EDIT}
    assert backend(write_index(tmp_path / "kontext", "FluxKontextPipeline")).fills() == {GENERATE, EDIT}
    assert backend(write_index(tmp_path / "qwen-edit", "QwenImageEditPipeline")).fills() == {EDIT}
    assert backend(write_index(tmp_path / "fill", "FluxFillPipeline")).fills() == {EDIT}
    assert pipeline_kind("QwenImagePipeline").guidance_arg == "true_cfg_scale"

    sd = started(models["sd"], steps=2)
    with pytest.raises(ConfigError, match="cannot edit"):
        anyio.run(lambda: sd.edit([noise_image(0)], "x"))
    ip2p = started(models["ip2p"], steps=2)
    with pytest.raises(ConfigError, match="cannot generate"):
        anyio.run(lambda: ip2p.generate(["x"]))


def test_identity_tracks_outputs_not_operations(models: dict[str, Path], tmp_path: Path) -> None:
    base = backend(models["sd"], steps=2).identity()
    assert base["provider"] == "diffusers" and base["model"] == str(models["sd"].resolve())
    assert base["pipeline"] == "StableDiffusionPipeline" and base["dtype"] == "float32"
    assert backend(models["sd"], steps=3).identity() != base
    assert backend(models["sd"], steps=2, guidance=3).identity() != base
    assert backend(models["sd"], steps=2, batch_size=8, concurrency=3).identity() == base
    assert backend(models["sd"], steps=2, dtype="fp32").identity() == base  # the default, spelled out

    model = write_index(tmp_path / "model", "StableDiffusionPipeline")
    (model / "unet").mkdir()
    (model / "unet" / "weights.safetensors").write_bytes(b"x" * 10)
    before = backend(model).identity()
    (model / "unet" / "weights.safetensors").write_bytes(b"x" * 11)
    assert backend(model).identity()["model_version"] != before["model_version"]


def test_backend_is_registered_under_its_provider_name() -> None:
    from umni.backends.contract import backend_class, known_providers

    if "diffusers" not in known_providers():
        pytest.skip("entry points not installed yet (re-run pip install -e .)")
    assert backend_class("diffusers") is DiffusersBackend


# -- the batcher on its own ---------------------------------------------------------------------------


def test_batcher_survives_cancelled_requests() -> None:
    calls: list[list[int]] = []

    def run(payloads: list[int]) -> list[int]:
        calls.append(list(payloads))
        return [payload * 10 for payload in payloads]

    batcher = MicroBatcher(run, window=0.05)
    results: dict[int, int] = {}

    async def submit(value: int) -> None:
        results[value] = await batcher.submit(value, key="k", limit=4)

    async def main() -> None:
        leader_scope = anyio.CancelScope()  # the leader is cancelled during its gathering window
        async with anyio.create_task_group() as group:
            group.start_soon(_cancellable, submit, 1, leader_scope)
            await anyio.sleep(0.01)
            group.start_soon(submit, 2)
            group.start_soon(submit, 3)
            await anyio.sleep(0.01)
            leader_scope.cancel()

    anyio.run(main)
    assert results == {2: 20, 3: 30}
    assert calls == [[2, 3]]
    # The batcher is idle again and works in a new event loop.
    anyio.run(submit, 4)
    assert results[4] == 40


async def _cancellable(submit: Any, value: int, scope: anyio.CancelScope) -> None:
    with scope:
        await submit(value)


def test_batcher_gives_each_request_its_own_error() -> None:
    def run(payloads: list[int]) -> list[Any]:
        return [ValueError(f"bad {p}") if p % 2 else p for p in payloads]

    batcher = MicroBatcher(run)
    outcomes: dict[int, Any] = {}

    async def submit(value: int) -> None:
        try:
            outcomes[value] = await batcher.submit(value, key=None, limit=8)
        except ValueError as exc:
            outcomes[value] = str(exc)

    async def main() -> None:
        async with anyio.create_task_group() as group:
            for value in range(4):
                group.start_soon(submit, value)

    anyio.run(main)
    assert outcomes == {0: 0, 1: "bad 1", 2: 2, 3: "bad 3"}
    assert batcher.stats.sizes == [4]


# -- the throughput benchmark -------------------------------------------------------------------------


def test_batching_benchmark_reports_calls_throughput_and_unchanged_images(models: dict[str, Path]) -> None:
    from umni_adapters.diffusion_bench import run_batching_benchmark

    result = run_batching_benchmark(models["sd"], n=5, batch_size=2, params={"steps": 2})
    assert result["pipeline"] == "StableDiffusionPipeline" and result["task"] == "generate"
    assert (result["sequential_calls"], result["batched_calls"]) == (5, 3)
    assert result["max_pixel_difference"] <= 1
    assert result["batched_images_per_second"] == pytest.approx(5 / result["batched_seconds"])
    assert result["speedup"] == pytest.approx(result["sequential_seconds"] / result["batched_seconds"])

    edits = run_batching_benchmark(models["ip2p"], n=3, batch_size=3, params={"steps": 2}, edit_image_size=(32, 32))
    assert edits["task"] == "edit" and (edits["sequential_calls"], edits["batched_calls"]) == (3, 1)
