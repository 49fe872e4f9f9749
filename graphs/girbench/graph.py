"""One GIR-Bench case's graph: the model's image, then the nodes that score it.

Every score is a `compute` node (versioned, cached; its functions are in `scoring`) or a tool node,
so re-running the scorer with a new detector re-uses every generated image. A score node's case
truth enters its cache key (`const`), and the case files a scorer reads enter by content hash.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from PIL import Image

from umni.plugin import DETECT, EMBED, OCR, Graph, ImageFile, Ref

from . import scoring
from .cases import GirCase, metric_unavailable
from .dataset import NumericalCase, PerceptionCase, PuzzleCase, SpatialCase, TextCase, UniCase, VisualLogicCase
from .options import GirOptions
from .prompts import PERCEPTION_INSTRUCTION, PUZZLE_INSTRUCTION, SUDOKU_INSTRUCTION


@dataclass(frozen=True)
class GirHandles:
    """The nodes a case's record reads, kept by `build` (no node id is agreed on by convention)."""

    #: the generated or edited image
    image: Ref | None = None
    #: the metric's scoring node (``similarity`` for Uni generation)
    score: Ref | None = None
    #: the nodes before `score` whose failure the record names, in the order they are checked
    related: tuple[Ref, ...] = ()
    #: the Uni understanding answer
    vqa: Ref | None = None
    #: puzzle, official features: one compute node holding both feature vectors
    features: Ref | None = None
    #: puzzle, features from the embed role: the output's and the solution's embeddings
    embeds: tuple[Ref, Ref] | None = None


def _file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _score(
    g: Graph,
    id: str,
    fn: Callable[..., Any],
    truth: dict[str, Any],
    *,
    version: str = "1",
    files: dict[str, Path] | None = None,
    inputs: Mapping[str, Ref] | None = None,
    **named: Ref,
) -> Ref:
    """A compute node with the case's ground truth in its cache key (`const`), so two cases whose
    detections agree but whose truths differ never share a result. Case files the scorer reads enter
    by content hash (inside the truth) and by path (where to read them)."""
    const: dict[str, Any] = {"truth": truth}
    if files:
        sha256 = {name: _file_sha256(path) for name, path in sorted(files.items())}
        const = {"truth": {**truth, "files_sha256": sha256}, "files": {name: str(path) for name, path in sorted(files.items())}}
    return g.compute_with(id, fn, {**(inputs or {}), **named}, version=version, const=const)


def build_case_graph(case: GirCase, options: GirOptions) -> Graph[GirHandles]:
    g: Graph[GirHandles] = Graph(case.id)
    data = case.data
    h = GirHandles()
    if isinstance(data, UniCase):
        h = _build_uni(g, case, options)
    elif isinstance(data, NumericalCase):
        image = g.generate("image", [data.prompt])
        found = g.tool("detect", DETECT, image, labels=list(data.task.objects))
        truth = {"objects": list(data.task.objects), "number": list(data.task.number)}
        score = _score(g, "score", scoring.score_numerical, truth, version="3", detections=found)
        h = GirHandles(image, score, (image, found))
    elif isinstance(data, SpatialCase):
        image = g.generate("image", [data.prompt])
        found = g.tool("detect", DETECT, image, labels=data.labels)
        truth = {"labels": data.labels, "relations": [list(r) for r in data.relations]}
        score = _score(g, "score", scoring.score_spatial, truth, version="3", detections=found)
        h = GirHandles(image, score, (image, found))
    elif isinstance(data, TextCase):
        image = g.generate("image", [data.prompt])
        lines = g.tool("ocr", OCR, image)
        h = GirHandles(image, _score(g, "score", scoring.score_text, {"text": data.text}, lines=lines), (image, lines))
    elif isinstance(data, PuzzleCase):
        assert data.question_image is not None, "a puzzle without an input image is skipped at load"
        image = g.edit("image", ImageFile(data.question_image), PUZZLE_INSTRUCTION)
        if options.features == "official":
            weights = {"fid_weights": options.fid_weights or None}
            solution = {"solution": data.solution_image}
            h = GirHandles(image, features=_score(g, "features", scoring.puzzle_features, weights, files=solution, output=image))
        else:
            output = g.tool("embed/output", EMBED, image)
            h = GirHandles(image, embeds=(output, g.tool("embed/solution", EMBED, ImageFile(data.solution_image))))
    elif isinstance(data, VisualLogicCase):
        h = _build_sudoku(g, data)
    elif isinstance(data, PerceptionCase):
        assert case.prompt is not None
        image = g.edit("image", ImageFile(data.image), PERCEPTION_INSTRUCTION.format(target=case.prompt))
        files = {"mask": data.mask, "image": data.image}
        h = GirHandles(image, _score(g, "score", scoring.score_perception, {}, version="2", files=files, edited=image), (image,))
    return g.with_handles(h)


def _build_uni(g: Graph[GirHandles], case: GirCase, options: GirOptions) -> GirHandles:
    data: UniCase = case.data
    h = GirHandles()
    if metric_unavailable(case, "uni_generation", options) is None:
        image = g.generate("image", [case.prompt or ""])
        if options.features == "official":
            files = {f"ref_{i:03d}": p for i, p in enumerate(data.references)}
            score = _score(g, "similarity", scoring.score_dinov3_similarity, {"model": options.uni_model}, files=files, generated=image)
            h = GirHandles(image, score, (image,))
        else:
            generated = g.tool("embed/image", EMBED, image)
            refs = {f"ref_{i:03d}": g.tool(f"embed/ref/{i}", EMBED, ImageFile(p)) for i, p in enumerate(data.references)}
            score = _score(g, "similarity", scoring.score_similarity, {}, inputs={"generated": generated, **refs})
            h = GirHandles(image, score, (image, generated, *refs.values()))
    if metric_unavailable(case, "uni_understanding", options) is None:
        assert case.vqa is not None
        h = replace(h, vqa=g.answer("vqa", [ImageFile(case.vqa.image), case.vqa.question], list(case.vqa.options)))
    return h


def _build_sudoku(g: Graph[GirHandles], data: VisualLogicCase) -> GirHandles:
    """The output, the question and the answer image are all read by OCR, as officially: the
    official score works on the positions of the digits read from all three."""
    spec = data.spec
    image = g.edit("image", ImageFile(data.question_image), SUDOKU_INSTRUCTION.format(n=spec.grid_size))
    lines = g.tool("ocr", OCR, image)
    truth: dict[str, Any] = {"grid_size": spec.grid_size, "grid": spec.grid, "solution": spec.solution}
    with Image.open(data.question_image) as im:
        truth["question_size"] = list(im.size)
    with Image.open(data.answer_image) as im:
        truth["answer_size"] = list(im.size)
    inputs: dict[str, Ref] = {
        "edited": image,
        "lines": lines,
        "question_lines": g.tool("ocr/question", OCR, ImageFile(data.question_image)),
        "answer_lines": g.tool("ocr/answer", OCR, ImageFile(data.answer_image)),
    }
    score = _score(g, "score", scoring.score_sudoku, truth, version="2", inputs=inputs)
    return GirHandles(image, score, (image, lines, inputs["question_lines"], inputs["answer_lines"]))
