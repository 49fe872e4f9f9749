"""Diffusers families the adapters tests did not run: SDXL draws; Qwen-Image-Edit, -Edit-Plus (two
images) and LongCat-Image-Edit edit; LongCat-Image draws; OmniGen draws and edits (two images). Each is a tiny random pipeline behind
`diffusers/<folder>`, run in a real graph by the runner, one or two steps.

Checked: the node succeeds at the size umni promises (edits at the input's size, with a ``resized:``
note where the class picks its own), every input image is counted, and a seed reproduces its image.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio
import numpy as np
import pytest
from PIL import Image

from tests.adapters.tiny_diffusers import png, started
from umni.backends.bindings import Bindings
from umni.engine.runner import Runner
from umni.graph import Graph, ImageFile
from umni.store import Cache
from umni.store.imageref import ImageRef


def _noise(path: Path, seed: int, width: int, height: int) -> ImageFile:
    Image.fromarray(np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)).save(path)
    return ImageFile(path)


def _run(graph: Graph, specs: list[str], tmp_path: Path) -> dict:
    runner = Runner(Bindings.from_specs("sim/umm", specs), Cache(tmp_path / "cache"))
    return anyio.run(runner.run_graph, graph)


def _drawn(family: str, spec: str, tmp_path: Path) -> tuple[int, int]:
    graph = Graph(f"{family} draws")
    graph.generate("draw", ["a red cube on a blue ball"])
    outcome = _run(graph, [f"generate={spec}"], tmp_path)["draw"]
    assert outcome.ok, outcome.failure
    assert outcome.image is not None
    return outcome.image.width, outcome.image.height


def test_sdxl_draws_in_a_graph(tiny: Callable[[str], Path], tmp_path: Path) -> None:
    assert _drawn("sdxl", f"diffusers/{tiny('sdxl')}?steps=2", tmp_path) == (32, 32)


def test_longcat_image_draws_at_the_asked_size(tiny: Callable[[str], Path], tmp_path: Path) -> None:
    assert _drawn("longcat", f"diffusers/{tiny('longcat_image')}?steps=1&width=32&height=32", tmp_path) == (32, 32)


def _edited(family: str, spec: str, images: list[ImageFile], tmp_path: Path) -> tuple[ImageRef, dict]:
    graph = Graph(f"{family} edits")
    graph.edit("change", images, "make the cube blue")
    outcome = _run(graph, [f"edit={spec}"], tmp_path)["change"]
    assert outcome.ok, outcome.failure
    assert outcome.image is not None and outcome.output is not None
    return outcome.image, outcome.output


def test_qwen_image_edit_edits_at_the_input_size(tiny: Callable[[str], Path], tmp_path: Path) -> None:
    image, output = _edited("qwen-edit", f"diffusers/{tiny('qwen_image_edit')}?steps=1",
                            [_noise(tmp_path / "a.png", 1, 64, 32)], tmp_path)
    assert (image.width, image.height) == (64, 32) and output["usage"]["images_in"] == 1


def test_qwen_image_edit_plus_takes_every_input_image(tiny: Callable[[str], Path], tmp_path: Path) -> None:
    first, second = _noise(tmp_path / "a.png", 1, 64, 32), _noise(tmp_path / "b.png", 2, 32, 32)
    image, output = _edited("qwen-edit-plus", f"diffusers/{tiny('qwen_image_edit_plus')}?steps=1", [first, second],
                            tmp_path)
    assert (image.width, image.height) == (64, 32) and output["usage"]["images_in"] == 2
    made = started(tiny("qwen_image_edit_plus"), steps=1)
    a, b, c = (Image.open(p) for p in (tmp_path / "a.png", tmp_path / "b.png", tmp_path / "b.png"))
    both = anyio.run(lambda: made.edit([a, b], "make the cube blue", seed=3))
    again = anyio.run(lambda: made.edit([a, c], "make the cube blue", seed=3))
    alone = anyio.run(lambda: made.edit([a], "make the cube blue", seed=3))
    assert png(both.image) == png(again.image)
    assert png(both.image) != png(alone.image)  # the second image reaches the model


def test_longcat_image_edit_comes_back_at_the_input_size_with_a_note(tiny: Callable[[str], Path], tmp_path: Path) -> None:
    image, output = _edited("longcat-edit", f"diffusers/{tiny('longcat_image_edit')}?steps=1",
                            [_noise(tmp_path / "a.png", 1, 48, 32)], tmp_path)
    assert (image.width, image.height) == (48, 32)
    assert any(str(note).startswith("resized: LongCatImageEditPipeline") for note in output.get("notes", []))


def test_omnigen_draws_and_edits_with_every_image_tagged(tiny: Callable[[str], Path], tmp_path: Path) -> None:
    spec = f"diffusers/{tiny('omnigen')}?steps=1"
    assert _drawn("omnigen", spec + "&width=32&height=32", tmp_path) == (32, 32)
    first, second = _noise(tmp_path / "a.png", 1, 48, 32), _noise(tmp_path / "b.png", 2, 32, 32)
    image, output = _edited("omnigen", spec, [first, second], tmp_path)
    assert (image.width, image.height) == (48, 32) and output["usage"]["images_in"] == 2
    made = started(tiny("omnigen"), steps=1)
    a, b = Image.open(tmp_path / "a.png"), Image.open(tmp_path / "b.png")
    both = anyio.run(lambda: made.edit([a, b], "put the cube from image 2 on image 1", seed=3))
    alone = anyio.run(lambda: made.edit([a], "put the cube from image 2 on image 1", seed=3))
    assert png(both.image) != png(alone.image)  # the second image, tagged <img><|image_2|></img>, reaches it


def test_longcat_image_prompt_rewrite_is_in_the_identity_and_reaches_the_pipeline(
    tiny: Callable[[str], Path], tmp_path: Path,
) -> None:
    """LongCat-Image rewrites prompts by default (its pipeline's default, kept); the identity says so,
    prompt_rewrite=false turns it off (a different image from the same seed), and other classes refuse it."""
    import anyio

    from umni.util.errors import ConfigError
    from umni.util.spec import Spec
    from umni_adapters.diffusion import DiffusersBackend

    base = f"diffusers/{tiny('longcat_image')}?steps=1&width=32&height=32"
    default, off = DiffusersBackend(Spec.parse(base)), DiffusersBackend(Spec.parse(base + "&prompt_rewrite=false"))
    assert default.identity()["params"]["prompt_rewrite"] is True
    assert off.identity()["params"]["prompt_rewrite"] is False
    assert default.identity() != off.identity()
    drawn = []
    for model in (default, off):
        anyio.run(model.start)
        drawn.append(anyio.run(lambda m=model: m.generate(["a red cube"], seed=3)).image.tobytes())
    assert drawn[0] != drawn[1]
    with pytest.raises(ConfigError, match="prompt_rewrite"):
        DiffusersBackend(Spec.parse(f"diffusers/{tiny('sdxl')}?prompt_rewrite=true"))
