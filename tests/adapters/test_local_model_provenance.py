"""What local-model backends say of how they made a role's outputs (issue 33 item 1): the folder and
the hash of its files as the revision, dtype, device and the sampling settings in effect, defaults
included. Built from tiny model folders; no weights are loaded."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.adapters.tiny_diffusers import backend, build_tiny_sd
from umni.util.spec import Spec
from umni_adapters import hf_loading
from umni_adapters.hf import HFBackend


def hf(folder: Path, query: str = "") -> HFBackend:
    return HFBackend(Spec.parse(f"hf/{folder}" + (f"?{query}" if query else "")))


def test_a_transformers_vlm_states_its_folder_hash_dtype_device_and_text_sampling(vlm_dir: Path) -> None:
    made = hf(vlm_dir, "temperature=0.5&max_new_tokens=32&dtype=fp32&device=cpu").provenance("judge")
    assert (made.backend, made.model, made.dtype, made.device) == ("hf", str(vlm_dir), "float32", "cpu")
    assert made.revision == hf_loading.local_revision(vlm_dir)
    assert made.sampling is not None and (made.sampling.temperature, made.sampling.max_tokens) == (0.5, 32)
    assert made.seed_policy is not None and "seeded by the node's seed" in made.seed_policy
    greedy = hf(vlm_dir, "device=cpu").provenance("understand")
    assert greedy.sampling is not None and greedy.sampling.temperature == 0.0 and greedy.sampling.max_tokens is None
    assert greedy.seed_policy is not None and "not used" in greedy.seed_policy


def test_janus_states_its_image_settings_for_generate_defaults_included(janus_dir: Path) -> None:
    made = hf(janus_dir, "device=cpu&cfg=4").provenance("generate")
    assert made.sampling is not None and (made.sampling.guidance, made.sampling.temperature) == (4.0, 1.0)


def test_a_diffusers_pipeline_states_steps_guidance_and_its_folder_hash(tmp_path: Path) -> None:
    pytest.importorskip("diffusers")
    folder = build_tiny_sd(tmp_path / "tiny-sd")
    drawing = backend(folder, steps=3, guidance=2.5, device="cpu")
    made = drawing.provenance("generate")
    assert (made.backend, made.model, made.device, made.revision) == ("diffusers", str(folder.resolve()), "cpu", drawing.source.fingerprint)
    assert made.sampling is not None and (made.sampling.steps, made.sampling.guidance) == (3, 2.5)
    unset = backend(folder, device="cpu").provenance("generate")
    assert unset.sampling is not None and (unset.sampling.steps, unset.sampling.guidance) == (None, None)
