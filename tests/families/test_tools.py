"""Detectors (Grounding DINO, OWLv2) and vision encoders (CLIP, SigLIP, DINOv2, DINOv3) as the
``detect`` and ``embed`` tools of a real graph, each a tiny random checkpoint behind `hf/<folder>`.

Boxes from random weights land anywhere; the checks are that every one is inside the image and
named by a label that was asked for, and that embeddings are unit rows the runner records.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio
import numpy as np
import pytest
from PIL import Image

from umni.backends.bindings import Bindings
from umni.engine.runner import Runner
from umni.graph import Graph, ImageFile
from umni.store import Cache


def _picture(tmp_path: Path) -> ImageFile:
    path = tmp_path / "scene.png"
    Image.fromarray(np.random.default_rng(0).integers(0, 256, (30, 40, 3), dtype=np.uint8)).save(path)
    return ImageFile(path)


def _run(graph: Graph, specs: list[str], tmp_path: Path) -> dict:
    runner = Runner(Bindings.from_specs("sim/umm", specs), Cache(tmp_path / "cache"))
    return anyio.run(runner.run_graph, graph)


@pytest.mark.parametrize("family", ["grounding_dino", "owlv2"])
def test_detector_family_finds_asked_labels_in_a_graph(family: str, tiny: Callable[[str], Path], tmp_path: Path) -> None:
    labels = ["red cube", "dog"]
    graph = Graph(f"{family} detect")
    graph.tool("find", "detect", _picture(tmp_path), labels=labels)
    outcome = _run(graph, [f"detect=hf/{tiny(family)}?threshold=0.0"], tmp_path)["find"]
    assert outcome.ok, outcome.failure
    boxes = outcome.value
    assert boxes, "threshold 0 keeps every candidate"
    for box in boxes:
        assert box["label"] in labels, box
        x0, y0, x1, y1 = box["box"]
        assert 0 <= x0 <= x1 <= 40 and 0 <= y0 <= y1 <= 30


@pytest.mark.parametrize("family", ["clip", "siglip", "dinov2", "dinov3"])
def test_encoder_family_embeds_in_a_graph(family: str, tiny: Callable[[str], Path], tmp_path: Path) -> None:
    graph = Graph(f"{family} embed")
    graph.tool("features", "embed", _picture(tmp_path))
    outcome = _run(graph, [f"embed=hf/{tiny(family)}"], tmp_path)["features"]
    assert outcome.ok, outcome.failure
    row = np.asarray(outcome.value, dtype=np.float64).reshape(-1)
    assert row.size > 0 and abs(np.linalg.norm(row) - 1.0) < 1e-4
