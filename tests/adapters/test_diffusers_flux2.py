"""FLUX.2 [klein] on a tiny random pipeline: it draws, and edits with several reference images.

Built from configs (Qwen3 text encoder, FLUX.2 VAE and transformer) and run in a real graph
through the runner, with both roles bound to the ``diffusers/<path>`` spec. Images are small and
runs take one step: the checks are about what reaches the pipeline and what size comes back.
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import anyio
import numpy as np
import pytest
from PIL import Image

from tests.adapters.tiny_diffusers import build_tiny_flux2_klein, png, started
from umni.backends.roles import EDIT, GENERATE

pytest.importorskip("diffusers")


@pytest.fixture(scope="module")
def klein(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_flux2_klein(tmp_path_factory.mktemp("flux2") / "klein")


def noise(seed: int, width: int = 104, height: int = 72) -> Image.Image:
    # FLUX.2 refuses reference images under 64 pixels a side.
    return Image.fromarray(np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8))


def test_klein_fills_generate_and_edit_and_every_reference_image_counts(klein: Path) -> None:
    made = started(klein, steps=1)
    assert made.fills() == {GENERATE, EDIT}
    first, second = noise(1), noise(2)
    both = anyio.run(lambda: made.edit([first, second], "put them together", seed=3))
    assert both.image.size == first.size and not both.notes
    again = anyio.run(lambda: made.edit([first, second], "put them together", seed=3))
    assert png(again.image) == png(both.image)
    other_second = anyio.run(lambda: made.edit([first, noise(4)], "put them together", seed=3))
    assert png(other_second.image) != png(both.image)  # the second image reaches the model


def test_klein_in_a_real_graph(klein: Path, tmp_path: Path) -> None:
    from umni.backends.bindings import Bindings
    from umni.engine.runner import Runner
    from umni.graph.graph import Graph, ImageFile
    from umni.store.cache import Cache

    reference = tmp_path / "reference.png"
    noise(5, 80, 64).save(reference)
    spec = f"diffusers/{klein}?steps=1"
    graph = Graph("klein")
    drawn = graph.generate("draw", ["a red cube"])
    graph.edit("combine", [ImageFile(reference), drawn], "put the cube on the picture")
    runner = Runner(Bindings.from_specs("sim/umm", [f"generate={spec}", f"edit={spec}"]), Cache(tmp_path / "cache"))
    outcomes = anyio.run(runner.run_graph, graph)
    assert outcomes["draw"].ok, outcomes["draw"].failure
    assert outcomes["combine"].ok, outcomes["combine"].failure
    combined = outcomes["combine"].image
    assert combined is not None
    assert (combined.width, combined.height) == (80, 64)  # the first image's size
    assert outcomes["combine"].output is not None
    assert outcomes["combine"].output["usage"]["images_in"] == 2
