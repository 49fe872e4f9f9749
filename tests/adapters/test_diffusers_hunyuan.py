"""HunyuanImage-2.1 on a tiny random pipeline, drawing in a real graph through the runner.

Its prompt goes to two encoders (Qwen2.5-VL for the scene, ByT5 for text in quotes), so the test
prompt quotes a word; the checks are the role, the size and that a seed fixes the image.
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import anyio
import pytest

from tests.adapters.tiny_diffusers import build_tiny_hunyuan_image, png, started
from umni.backends.roles import GENERATE
from umni.util.errors import ConfigError

pytest.importorskip("diffusers")


@pytest.fixture(scope="module")
def hunyuan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_hunyuan_image(tmp_path_factory.mktemp("hunyuan") / "hunyuan-image")


def test_hunyuan_image_draws_seeded_at_the_asked_size(hunyuan: Path) -> None:
    made = started(hunyuan, steps=1, width=32, height=48)
    assert made.fills() == {GENERATE}
    first = anyio.run(lambda: made.generate(['a sign saying "open"'], seed=1))
    again = anyio.run(lambda: made.generate(['a sign saying "open"'], seed=1))
    other = anyio.run(lambda: made.generate(['a sign saying "open"'], seed=2))
    assert first.image.size == (32, 48)
    assert png(first.image) == png(again.image) != png(other.image)
    with pytest.raises(ConfigError, match="cannot edit"):
        anyio.run(lambda: made.edit([first.image], "x"))


def test_hunyuan_image_in_a_real_graph(hunyuan: Path, tmp_path: Path) -> None:
    from umni.backends.bindings import Bindings
    from umni.engine.runner import Runner
    from umni.graph.graph import Graph
    from umni.store.cache import Cache

    graph = Graph("hunyuan")
    drawn = graph.generate("draw", ["a red cube"])
    graph.answer("colour", [drawn, "What colour is the cube?"], options=["red", "green"])
    spec = f"diffusers/{hunyuan}?steps=1&width=32&height=32"
    runner = Runner(Bindings.from_specs("sim/umm", [f"generate={spec}"]), Cache(tmp_path / "cache"))
    outcomes = anyio.run(runner.run_graph, graph)
    assert outcomes["draw"].ok, outcomes["draw"].failure
    image = outcomes["draw"].image
    assert image is not None and (image.width, image.height) == (32, 32)
