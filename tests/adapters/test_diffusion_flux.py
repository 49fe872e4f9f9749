"""The diffusers backend on tiny random FLUX.1 (text-to-image, Kontext, Fill) and Qwen-Image pipelines.

Each pipeline is built from configs with random weights, saved with ``save_pretrained`` and loaded
through the ``diffusers/<path>`` spec, the way a downloaded model is. Images are 32 pixels a side
and runs take two steps, so the checks are about plumbing: which roles a class fills, what size
comes out, that a seed fixes the bytes, and that batching does not change any image.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import anyio
import numpy as np
import pytest
import torch
from PIL import Image

from tests.adapters.tiny_diffusers import (
    backend,
    build_tiny_flux,
    build_tiny_flux_fill,
    build_tiny_flux_kontext,
    build_tiny_qwen_image,
    concurrently,
    pixels,
    png,
    started,
)
from umni.backends.roles import EDIT, GENERATE, Editor, Generator
from umni.util.errors import ConfigError
from umni_adapters.diffusion import DiffusersBackend

pytest.importorskip("diffusers")

SIDE = 32


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("flux")
    return {
        "flux": build_tiny_flux(root / "flux"),
        "kontext": build_tiny_flux_kontext(root / "kontext"),
        "fill": build_tiny_flux_fill(root / "fill"),
        "qwen": build_tiny_qwen_image(root / "qwen-image"),
    }


def noise_image(seed: int, size: tuple[int, int] = (SIDE, SIDE)) -> Image.Image:
    width, height = size
    return Image.fromarray(np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8))


class KwargsSpy:
    """Stands in front of a real pipeline, recording each call's arguments, then delegates."""

    def __init__(self, pipe: Any) -> None:
        self.pipe = pipe
        self.calls: list[dict[str, Any]] = []

    def __call__(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        return self.pipe(**kwargs)

    @property
    def batch_sizes(self) -> list[int]:
        return [len(call["prompt"]) if isinstance(call["prompt"], list) else 1 for call in self.calls]


def spied(made: DiffusersBackend) -> KwargsSpy:
    spy = KwargsSpy(made.pipeline.pipe)
    made.pipeline.pipe = spy
    return spy


def unspy(made: DiffusersBackend) -> None:
    if isinstance(made.pipeline.pipe, KwargsSpy):
        made.pipeline.pipe = made.pipeline.pipe.pipe


def generate_all(made: DiffusersBackend, jobs: Sequence[tuple[str, int]]) -> list[Image.Image]:
    """The jobs as concurrent requests, as the engine's task group sends them."""
    calls = [lambda p=prompt, s=seed: made.generate([p], seed=s) for prompt, seed in jobs]
    return [reply.image for reply in concurrently(calls)]


def edit_all(made: DiffusersBackend, jobs: Sequence[tuple[Image.Image, str, int]]) -> list[Image.Image]:
    calls = [lambda i=image, t=instruction, s=seed: made.edit([i], t, seed=s) for image, instruction, seed in jobs]
    return [reply.image for reply in concurrently(calls)]


PROMPTS = [("a red cube", 11), ("the blue sky over the sea", 22), ("an apple", 33)]
EDITS = [(noise_image(1), "make it red", 7), (noise_image(2), "add a hat", 8), (noise_image(3), "night", 9)]


def check_generation(made_alone: DiffusersBackend, made_batched: DiffusersBackend) -> None:
    """Size, seed reproducibility and batch independence of text-to-image generation."""
    alone = [generate_all(made_alone, [job])[0] for job in PROMPTS]
    assert all(image.size == (SIDE, SIDE) and image.mode == "RGB" for image in alone)
    assert png(generate_all(made_alone, [PROMPTS[0]])[0]) == png(alone[0])
    assert png(generate_all(made_alone, [(PROMPTS[0][0], 12)])[0]) != png(alone[0])
    spy = spied(made_batched)
    try:
        batched = generate_all(made_batched, PROMPTS)
    finally:
        unspy(made_batched)
    assert spy.batch_sizes == [3]  # one call with three prompts
    for image_alone, image_batched in zip(alone, batched):
        assert np.abs(pixels(image_alone) - pixels(image_batched)).max() <= 1
    assert len({png(image) for image in batched}) == 3


def check_editing(made_alone: DiffusersBackend, made_batched: DiffusersBackend) -> list[Image.Image]:
    """Size, seed reproducibility, dependence on the input and batch independence of editing."""
    alone = [edit_all(made_alone, [job])[0] for job in EDITS]
    assert all(image.size == (SIDE, SIDE) and image.mode == "RGB" for image in alone)
    assert png(edit_all(made_alone, [EDITS[0]])[0]) == png(alone[0])
    other_input = edit_all(made_alone, [(noise_image(4), *EDITS[0][1:])])[0]
    assert png(other_input) != png(alone[0])  # the input image reaches the model
    spy = spied(made_batched)
    try:
        batched = edit_all(made_batched, EDITS)
    finally:
        unspy(made_batched)
    assert spy.batch_sizes == [3]
    for image_alone, image_batched in zip(alone, batched):
        assert np.abs(pixels(image_alone) - pixels(image_batched)).max() <= 1
    return alone


# -- roles -------------------------------------------------------------------------------------------


def test_roles_follow_each_pipeline_class(models: dict[str, Path]) -> None:
    expected = {
        "flux": ("FluxPipeline", {GENERATE}),
        "kontext": ("FluxKontextPipeline", {GENERATE, EDIT}),
        "fill": ("FluxFillPipeline", {EDIT}),
        "qwen": ("QwenImagePipeline", {GENERATE}),
    }
    for name, (class_name, roles) in expected.items():
        made = backend(models[name])
        assert made.identity()["pipeline"] == class_name
        assert made.fills() == roles, name


# -- FLUX.1 text-to-image ----------------------------------------------------------------------------


def test_flux_generates_seeded_batch_independent_images(models: dict[str, Path]) -> None:
    made_alone = started(models["flux"], steps=2, width=SIDE, height=SIDE, batch_size=1)
    assert isinstance(made_alone, Generator)
    check_generation(made_alone, started(models["flux"], steps=2, width=SIDE, height=SIDE, batch_size=3))
    with pytest.raises(ConfigError, match="cannot edit"):
        anyio.run(lambda: made_alone.edit([noise_image(0)], "x"))


# -- FLUX.1 Kontext ----------------------------------------------------------------------------------


def test_kontext_generates_at_the_requested_size(models: dict[str, Path]) -> None:
    # Kontext rescales width x height to a megapixel unless max_area says otherwise: the backend
    # must pass it, or a 32x32 request would come back 1024x1024.
    made_alone = started(models["kontext"], steps=2, width=SIDE, height=SIDE, batch_size=1)
    check_generation(made_alone, started(models["kontext"], steps=2, width=SIDE, height=SIDE, batch_size=3))
    wide = started(models["kontext"], steps=2, width=48, height=SIDE)
    assert generate_all(wide, [("a red cube", 1)])[0].size == (48, SIDE)


def test_kontext_edits_keep_the_input_size_and_use_the_input(models: dict[str, Path]) -> None:
    made_alone = started(models["kontext"], steps=2, batch_size=1)
    assert isinstance(made_alone, Editor)
    alone = check_editing(made_alone, started(models["kontext"], steps=2, batch_size=3))

    spy = spied(made_alone)
    try:
        wide = edit_all(made_alone, [(noise_image(5, size=(48, SIDE)), "make it red", 1)])[0]
        # Image parts given to generate make it an edit of the first image.
        reply = anyio.run(lambda: made_alone.generate(["make it red", EDITS[0][0]], seed=EDITS[0][2]))
    finally:
        unspy(made_alone)
    assert wide.size == (48, SIDE)
    assert (spy.calls[0]["width"], spy.calls[0]["height"], spy.calls[0]["max_area"]) == (48, SIDE, 48 * SIDE)
    assert png(reply.image) == png(alone[0])


def test_kontext_needs_width_and_height_together(models: dict[str, Path]) -> None:
    with pytest.raises(ConfigError, match="width and height together"):
        backend(models["kontext"], width=SIDE)


# -- FLUX.1 Fill -------------------------------------------------------------------------------------


def test_fill_without_strength_below_one_is_refused_because_it_would_ignore_the_input(
    models: dict[str, Path],
) -> None:
    for params in ({}, {"strength": 1}):
        with pytest.raises(ConfigError, match="strength below 1"):
            started(models["fill"], steps=2, **params)
    with pytest.raises(ConfigError, match="strength"):
        backend(models["fill"], strength=0)
    with pytest.raises(ConfigError, match="FLUX Fill"):
        backend(models["flux"], strength=0.5)

    # Why: at strength 1 the real pipeline's output does not depend on the image at all.
    pipe = started(models["fill"], steps=2, strength=0.5).pipeline.pipe

    def fill_at_full_strength(image: Image.Image) -> bytes:
        output = pipe(
            prompt="make it red",
            image=image,
            mask_image=Image.new("L", image.size, 255),
            width=SIDE,
            height=SIDE,
            num_inference_steps=2,
            strength=1.0,
            generator=torch.Generator("cpu").manual_seed(0),
        )
        return png(output.images[0])

    assert fill_at_full_strength(noise_image(1)) == fill_at_full_strength(noise_image(2))


def test_fill_edits_keep_the_input_size_and_use_the_input(models: dict[str, Path]) -> None:
    made_alone = started(models["fill"], steps=2, strength=0.5, batch_size=1)
    check_editing(made_alone, started(models["fill"], steps=2, strength=0.5, batch_size=3))
    assert edit_all(made_alone, [(noise_image(5, size=(48, SIDE)), "x", 1)])[0].size == (48, SIDE)
    with pytest.raises(ConfigError, match="cannot generate"):
        anyio.run(lambda: made_alone.generate(["x"]))


# -- Qwen-Image text-to-image ------------------------------------------------------------------------


def test_qwen_image_generates_with_true_cfg(models: dict[str, Path]) -> None:
    made_alone = started(models["qwen"], steps=2, width=SIDE, height=SIDE, guidance=2.5, batch_size=1)
    check_generation(
        made_alone, started(models["qwen"], steps=2, width=SIDE, height=SIDE, guidance=2.5, batch_size=3)
    )
    spy = spied(made_alone)
    try:
        generate_all(made_alone, [("a red cube", 1)])
    finally:
        unspy(made_alone)
    # Qwen-Image only runs classifier-free guidance when given a negative prompt.
    assert spy.calls[0]["true_cfg_scale"] == 2.5 and spy.calls[0]["negative_prompt"] == " "
