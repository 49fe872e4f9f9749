"""The pipeline table agrees with diffusers, and edits come back at the input's exact size.

The table check reads each class's real ``__call__`` signature from the installed diffusers: a
renamed image or guidance argument there fails here rather than as a TypeError mid-run. The size
check runs a tiny random FLUX.1 Kontext pipeline on an input its latent grid cannot hold exactly
(the grid works in steps of twice the VAE's scale), in a real run and on the backend directly.
"""

from __future__ import annotations

import inspect
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import anyio
import numpy as np
import pytest
from PIL import Image

from tests.adapters.tiny_diffusers import build_tiny_flux_kontext, started
from umni.backends.roles import EDIT, GENERATE

diffusers = pytest.importorskip("diffusers")

from umni_adapters.diffusion import PIPELINE_KINDS, pipeline_kind  # noqa: E402


def _call_args(class_name: str) -> set[str]:
    cls = getattr(diffusers, class_name, None)
    if cls is None:
        pytest.fail(f"{class_name} is in umni's pipeline table but not in diffusers {diffusers.__version__}")
    return set(inspect.signature(cls.__call__).parameters)


@pytest.mark.parametrize("class_name", sorted(PIPELINE_KINDS))
def test_every_table_entry_names_arguments_its_class_takes(class_name: str) -> None:
    kind = PIPELINE_KINDS[class_name]
    args = _call_args(class_name)
    assert "prompt" in args
    assert kind.guidance_arg in args
    if EDIT in kind.roles:
        assert kind.image_arg in args
    if kind.negative_prompt is not None:
        assert "negative_prompt" in args
    if kind.area_arg is not None:
        assert kind.area_arg in args
    if GENERATE in kind.roles:
        assert {"width", "height"} <= args  # generate sizes come from the spec


def test_the_models_of_issue_13_have_their_roles() -> None:
    expected = {
        "OmniGenPipeline": {GENERATE, EDIT},
        "HunyuanImagePipeline": {GENERATE},
        "LongCatImagePipeline": {GENERATE},
        "LongCatImageEditPipeline": {EDIT},
        "QwenImageEditPlusPipeline": {EDIT},
        "GlmImagePipeline": {GENERATE, EDIT},
        "QwenImage21Pipeline": {GENERATE, EDIT},
        "Flux2KleinPipeline": {GENERATE, EDIT},
    }
    for class_name, roles in expected.items():
        assert pipeline_kind(class_name).roles == roles, class_name
    assert pipeline_kind("OmniGenPipeline").image_arg == "input_images"
    assert pipeline_kind("HunyuanImagePipeline").guidance_arg == "distilled_guidance_scale"


@pytest.fixture(scope="module")
def kontext(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_flux_kontext(tmp_path_factory.mktemp("kontext") / "kontext")


def test_an_edit_the_grid_cannot_hold_is_resized_back_and_noted(kontext: Path) -> None:
    made = started(kontext, steps=1)
    odd = Image.fromarray(np.random.default_rng(0).integers(0, 256, (33, 35, 3), dtype=np.uint8))
    reply = anyio.run(lambda: made.edit([odd], "make it red", seed=1))
    assert reply.image.size == (35, 33)
    (note,) = [note for note in reply.notes if note.startswith("resized:")]
    assert "FluxKontextPipeline returned" in note and "35x33" in note
    fits = odd.crop((0, 0, 32, 32))
    assert not [n for n in anyio.run(lambda: made.edit([fits], "x", seed=1)).notes if n.startswith("resized")]


def test_a_real_run_records_the_resize_note(kontext: Path, tmp_path: Path) -> None:
    from umni.backends.bindings import Bindings
    from umni.engine.runner import Runner
    from umni.graph.graph import Graph, ImageFile
    from umni.store.cache import Cache

    source = tmp_path / "odd.png"
    Image.fromarray(np.random.default_rng(2).integers(0, 256, (33, 35, 3), dtype=np.uint8)).save(source)
    graph = Graph("odd-size edit")
    graph.edit("edit", ImageFile(source), "make it red")
    runner = Runner(Bindings.from_specs("sim/umm", [f"edit=diffusers/{kontext}?steps=1"]), Cache(tmp_path / "cache"))
    outcome = anyio.run(runner.run_graph, graph)["edit"]
    assert outcome.ok, outcome.failure
    assert outcome.image is not None
    assert any(str(note).startswith("resized: FluxKontextPipeline") for note in (outcome.output or {}).get("notes", []))
