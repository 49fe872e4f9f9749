"""Tiny random models for the family tests, built once per test session and library versions.

Builders are slow next to the calls they enable (seconds each, on a shared 2-core machine), so the
``tiny`` fixture builds a family on first request into a session folder named after the installed
transformers/diffusers versions and hands the same folder to every later test.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

pytest.importorskip("transformers")
pytest.importorskip("diffusers")
pytest.importorskip("torchvision")  # the Qwen-VL and LLaVA-OneVision processors import it


def _builders() -> dict[str, Callable[[Path], Path]]:
    from tests.adapters import tiny_hf
    from tests.families import tiny_pipelines as pipes
    from tests.families import tiny_vision as vision

    return {
        "qwen25_vl": vision.build_qwen25_vl,
        "qwen3_vl": vision.build_qwen3_vl,
        "llava_onevision": vision.build_llava_onevision,
        "idefics3": tiny_hf.build_idefics3,
        "grounding_dino": vision.build_grounding_dino,
        "owlv2": tiny_hf.build_owlv2,
        "clip": vision.build_clip,
        "siglip": vision.build_siglip,
        "dinov2": tiny_hf.build_dinov2,
        "dinov3": vision.build_dinov3,
        "sdxl": pipes.build_sdxl,
        "qwen_image_edit": pipes.build_qwen_image_edit,
        "qwen_image_edit_plus": lambda path: pipes.build_qwen_image_edit(path, plus=True),
        "longcat_image": pipes.build_longcat_image,
        "longcat_image_edit": lambda path: pipes.build_longcat_image(path, edit=True),
        "omnigen": pipes.build_omnigen,
    }


@pytest.fixture(scope="session")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """``tiny(name)``: the folder of that family's tiny model, built on first use this session."""
    import diffusers
    import transformers

    root = tmp_path_factory.mktemp(f"families-tf{transformers.__version__}-df{diffusers.__version__}")
    builders = _builders()
    built: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in built:
            built[name] = builders[name](root / name)
        return built[name]

    return get
