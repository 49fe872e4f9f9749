"""Batching per family: concurrent requests share one model call, and each result is the one the
request gets alone (same labels and boxes, same embedding rows, same replies, greedy and sampled).

Every family is a tiny random checkpoint behind `hf/<folder>`; the batcher's own counters prove that
the requests did share a call. Floating-point sums may round differently when a kernel sees a batch,
so boxes, scores and embeddings are compared to 1e-5; text must be identical.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from PIL import Image

from umni.util.spec import Spec
from umni_adapters.hf import HFBackend

PROMPTS = ["a red cube", "what colour is the ball on the left of the cube", "how many objects", "yes or no"]


def _noise(seed: int, size: tuple[int, int] = (40, 30)) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8), mode="RGB")


def _backend(folder: Path, query: str = "") -> HFBackend:
    return HFBackend(Spec.parse(f"hf/{folder}?batch_size=4" + (f"&{query}" if query else "")))


async def _together(calls: Sequence[Callable[[], Any]]) -> list[Any]:
    results: list[Any] = [None] * len(calls)

    async def one(index: int, call: Callable[[], Any]) -> None:
        results[index] = await call()

    async with anyio.create_task_group() as group:
        for index, call in enumerate(calls):
            group.start_soon(one, index, call)
    return results


def _alone_and_together(model: HFBackend, calls: Sequence[Callable[[], Any]]) -> tuple[list[Any], list[Any]]:
    """Each call run by itself, then all at once; asserts the second run was one model call."""
    alone = [anyio.run(call) for call in calls]
    before = len(model._loaded.batcher.stats.sizes)
    together = anyio.run(_together, calls)
    assert model._loaded.batcher.stats.sizes[before:] == [len(calls)]
    return alone, together


def _same_detections(left: list, right: list) -> None:
    """Same boxes and scores; labels too, except where a random model scores two labels equally (0.5
    against 0.5 after a sigmoid) and rounding in a batched kernel picks the other one of the tie."""
    assert len(left) == len(right)
    flips = [(a, b) for a, b in zip(left, right) if a.label != b.label]
    assert len(flips) <= len(left) // 8, flips
    np.testing.assert_allclose([d.box for d in left], [d.box for d in right], atol=1e-4, rtol=1e-5)
    np.testing.assert_allclose([d.score for d in left], [d.score for d in right], atol=1e-5)


@pytest.mark.parametrize("family", ["grounding_dino", "owlv2"])
def test_detector_batches_and_matches_alone(family: str, tiny: Callable[[str], Path]) -> None:
    model = _backend(tiny(family), "threshold=0.0")
    labels = ["red cube", "dog"]
    calls = [lambda seed=seed: model.detect(_noise(seed), labels) for seed in range(4)]
    alone, together = _alone_and_together(model, calls)
    assert any(alone), "threshold 0 should keep boxes"
    for one, batched in zip(alone, together):
        _same_detections(one, batched)


def test_detections_with_other_labels_or_sizes_do_not_share_a_call(tiny: Callable[[str], Path]) -> None:
    model = _backend(tiny("owlv2"), "threshold=0.0")
    calls = [lambda: model.detect(_noise(0), ["cube"]), lambda: model.detect(_noise(1), ["dog"]),
             lambda: model.detect(_noise(2, (30, 30)), ["cube"])]
    anyio.run(model.start)
    before = len(model._loaded.batcher.stats.sizes) if model._loaded.batcher else 0
    anyio.run(_together, calls)
    assert sorted(model._loaded.batcher.stats.sizes[before:]) == [1, 1, 1]


@pytest.mark.parametrize("family", ["clip", "siglip", "dinov2", "dinov3"])
def test_encoder_batches_and_matches_alone(family: str, tiny: Callable[[str], Path]) -> None:
    model = _backend(tiny(family))
    # requests of different image counts and sizes: the processor brings every image to one size
    requests = [[_noise(0)], [_noise(1, (50, 20)), _noise(2)], [_noise(3, (24, 24))], [_noise(4), _noise(5)]]
    calls = [lambda images=images: model.embed(images) for images in requests]
    alone, together = _alone_and_together(model, calls)
    for one, batched, images in zip(alone, together, requests):
        assert batched.shape[0] == len(images)
        np.testing.assert_allclose(batched, one, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("family", ["qwen25_vl", "qwen3_vl", "llava_onevision", "idefics3"])
@pytest.mark.parametrize("temperature", ["0", "1.5"])
def test_understander_replies_batch_and_match_alone(family: str, temperature: str, tiny: Callable[[str], Path]) -> None:
    model = _backend(tiny(family), f"temperature={temperature}")
    image = _noise(7)
    calls = [lambda prompt=prompt, seed=seed: model.respond([image, prompt], max_tokens=5, seed=seed)
             for seed, prompt in enumerate(PROMPTS)]
    alone, together = _alone_and_together(model, calls)
    assert [(r.text, r.usage) for r in together] == [(r.text, r.usage) for r in alone]


@pytest.mark.parametrize("family", ["qwen25_vl", "idefics3"])
def test_judge_choices_batch_and_match_alone(family: str, tiny: Callable[[str], Path]) -> None:
    options = ["yes", "no", "unsure"]
    for query in ("mode=likelihood", "mode=letter&temperature=1"):
        model = _backend(tiny(family), query)
        calls = [lambda prompt=prompt, seed=seed, model=model: model.choose([_noise(seed), prompt], options, seed=seed)
                 for seed, prompt in enumerate(PROMPTS)]
        alone, together = _alone_and_together(model, calls)
        assert together == alone


def test_vlm_grounding_batches_and_matches_alone(tiny: Callable[[str], Path]) -> None:
    """Boxes asked of a chat VLM: one generate call for several images; an unparsable reply stays that
    request's own failure."""
    model = _backend(tiny("qwen25_vl"))
    calls = [lambda seed=seed, labels=labels: model.detect(_noise(seed), labels)
             for seed, labels in enumerate([["cube"], ["dog", "cat"], ["red ball"], ["cube"]])]

    def settle(call: Callable[[], Any]) -> Callable[[], Any]:
        async def run() -> Any:
            try:
                return await call()
            except Exception as exc:  # a random model rarely writes JSON
                return type(exc).__name__, str(exc)
        return run

    alone, together = _alone_and_together(model, [settle(call) for call in calls])
    assert together == alone


def test_omnigen_edits_with_several_images_batch_and_match_alone(tiny: Callable[[str], Path]) -> None:
    """OmniGen takes a list of input images per prompt: edits with two images each share one call,
    every image seeded by its own generator, and each equals the edit made alone."""
    from umni_adapters.diffusion import DiffusersBackend

    model = DiffusersBackend(Spec.parse(f"diffusers/{tiny('omnigen')}?steps=1&batch_size=3"))
    anyio.run(model.start)
    requests = [([_noise(2 * i, (32, 32)), _noise(2 * i + 1, (32, 32))], f"swap the objects {i}") for i in range(3)]
    calls = [lambda images=images, text=text, seed=seed: model.edit(images, text, seed=seed)
             for seed, (images, text) in enumerate(requests)]
    alone = [anyio.run(call) for call in calls]
    before = len(model.pipeline.batcher.stats.sizes)
    together = anyio.run(_together, calls)
    assert model.pipeline.batcher.stats.sizes[before:] == [3]
    for one, batched in zip(alone, together):
        difference = np.abs(np.asarray(one.image, dtype=int) - np.asarray(batched.image, dtype=int))
        assert difference.max() <= 1  # one 8-bit step where a batched kernel rounds differently
    assert np.asarray(alone[0].image).tobytes() != np.asarray(alone[1].image).tobytes()


def test_longcat_image_batches_without_prompt_rewrite_only(tiny: Callable[[str], Path]) -> None:
    """Without the rewrite LongCat-Image images batch and equal their single images; with it (the
    pipeline's default) every image is made alone, since the rewrite pads a batch of prompts."""
    from umni_adapters.diffusion import DiffusersBackend

    for rewrite, sizes in (("false", [3]), ("true", [1, 1, 1])):
        spec = f"diffusers/{tiny('longcat_image')}?steps=1&width=32&height=32&batch_size=3&prompt_rewrite={rewrite}"
        model = DiffusersBackend(Spec.parse(spec))
        anyio.run(model.start)
        calls = [lambda prompt=prompt, seed=seed, model=model: model.generate([prompt], seed=seed)
                 for seed, prompt in enumerate(PROMPTS[:3])]
        alone = [anyio.run(call) for call in calls]
        before = len(model.pipeline.batcher.stats.sizes)
        together = anyio.run(_together, calls)
        assert model.pipeline.batcher.stats.sizes[before:] == sizes
        for one, batched in zip(alone, together):
            difference = np.abs(np.asarray(one.image, dtype=int) - np.asarray(batched.image, dtype=int))
            assert difference.max() <= 1
