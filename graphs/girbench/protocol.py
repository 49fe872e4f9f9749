"""The GIR-Bench graphs: one per case, each ending in a classical (non-judge) score.

Every default score follows the official evaluation code (lihxxx/GIR-Bench ``eval/*.py``); where
umni differs, ``deviations.py`` says how and the summary lists it (umni's own figure beside the
official one for sudoku and spatial). Tasks and what scores them (per-case scores in
``scoring.py``; formulas in ``metrics.py``, ``sudoku.py``, ``masks.py``; features in ``dinov3.py``
and ``fid.py``):

- GIR-Bench-Uni (``uni``): generate the entity from its implicit prompt; mean cosine similarity of
  DINOv3 class-token features of the image and of each reference image; and, for the understanding
  side the released code lacks, a multiple-choice question about a real reference image (which
  entity it shows, distractors drawn from other entities).
- GIR-Bench-T2I: ``numerical`` (detect, every count exact), ``spatial`` (detect, relation geometry)
  and ``text`` (OCR, word-level continuous substring score).
- GIR-Bench-Edit: ``puzzle`` (edit the shuffled tiles back; torchmetrics' InceptionV3 features of
  output and solution per case, one FID over the whole set in `summarize`), ``sudoku`` (edit; OCR of
  output, question and answer, digits matched by position) and ``perception`` (edit the target
  green, IoU of the green mask).

``--option features=embed`` takes Uni and puzzle features from the run's embed role instead.
Every score is a `compute` node (versioned, cached) or a tool node, so re-running the scorer with a
new detector re-uses every generated image. Roles that a run cannot fill are declared with
``--option skip_roles=detect,ocr``: the cases (or, for Uni, the side) needing them are skipped with
that reason and counted, instead of failing validation or scoring 0; when nothing is left to score,
loading fails (exit 2).
"""
from __future__ import annotations

import hashlib
import os
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
from PIL import Image
from pydantic import BaseModel, ConfigDict, Field, field_validator

from umni.plugin import (
    DETECT,
    EDIT,
    EMBED,
    GENERATE,
    OCR,
    UNDERSTAND,
    CaseSet,
    Graph,
    HeadlineParts,
    ImageFile,
    InputError,
    Note,
    Number,
    Outcome,
    Protocol,
    Ref,
    Scores,
    Skipped,
    View,
    first_failure,
    node_status,
    shown_missing,
)

from . import scoring
from .cases import (
    NUMERICAL_FILE,
    SPATIAL_FILE,
    TEXT_FILE,
    UNI_CATEGORIES,
    NumericalCase,
    PerceptionCase,
    PuzzleCase,
    SpatialCase,
    TextCase,
    UniCase,
    VisualLogicCase,
    find_task_file,
    load_numerical_cases,
    load_perception_cases,
    load_prompt_map,
    load_puzzle_cases,
    load_spatial_cases,
    load_text_cases,
    load_uni_cases,
    load_visual_logic_cases,
    missing_images,
)
from .deviations import deviations
from .weights import missing_extractors

#: Tasks in the paper's table order.
TASKS = ("uni", "numerical", "spatial", "text", "puzzle", "sudoku", "perception")
#: Official folder and file names accepted in ``--option tasks=`` besides the short names.
TASK_ALIASES = {
    "numericalreasoning": "numerical",
    "spatiallayout": "spatial",
    "textrendering": "text",
    "visualpuzzle": "puzzle",
    "visuallogic": "sudoku",
    "reasoningperception": "perception",
}

#: Every reported metric: (key, task, title). Uni has two sides, each its own metric.
METRICS = (
    ("uni_understanding", "uni", "Uni · image understanding"),
    ("uni_generation", "uni", "Uni · image generation"),
    ("numerical", "numerical", "Numerical Reasoning"),
    ("spatial", "spatial", "Spatial Layout"),
    ("text", "text", "Text Rendering"),
    ("puzzle", "puzzle", "Visual Puzzle"),
    ("sudoku", "sudoku", "Visual Logic"),
    ("perception", "perception", "Reasoning Perception"),
)
METRIC_TITLES = {key: title for key, _, title in METRICS}
METRIC_TASK = {key: task for key, task, _ in METRICS}
#: The roles each metric needs; a metric whose role is listed in skip_roles is not run.
METRIC_ROLES: dict[str, tuple[str, ...]] = {
    "uni_understanding": (UNDERSTAND,),
    "uni_generation": (GENERATE, EMBED),
    "numerical": (GENERATE, DETECT),
    "spatial": (GENERATE, DETECT),
    "text": (GENERATE, OCR),
    "puzzle": (EDIT, EMBED),
    "sudoku": (EDIT, OCR),
    "perception": (EDIT,),
}
#: What Visual Puzzle's score is: why it has no interval and no per-case share.
PUZZLE_SET_STATISTIC = "exp(−FID/60) of one Fréchet distance over the whole set of outputs"
T2I_METRICS = ("numerical", "spatial", "text")
EDIT_METRICS = ("puzzle", "sudoku", "perception")
ALL_ROLES = (GENERATE, EDIT, UNDERSTAND, OCR, DETECT, EMBED)

#: The set folders an image root holds (the dataset's ``reference/`` folder, or the case folder).
_IMAGE_SETS = (*UNI_CATEGORIES, "ReasoningPerception", "VisualLogic", "VisualPuzzle")
PERCEPTION_FILE = "ReasoningPerception.json"

# Instructions and questions, in our own words.
PUZZLE_INSTRUCTION = (
    "This picture was cut into a grid of equal square tiles and the tiles were shuffled. Put every tile "
    "back where it belongs so the picture is whole again. Only move tiles: do not add, remove or redraw anything."
)
SUDOKU_INSTRUCTION = (
    "Solve the {n}x{n} sudoku in this image. Write a digit from 1 to {n} into every empty cell so that each "
    "row, each column and each marked block holds every digit exactly once. Keep the grid and the printed "
    "digits exactly as they are."
)
PERCEPTION_INSTRUCTION = (
    "Find the part of this image that the following description points to: {target} "
    "Paint exactly that region solid, fully opaque pure green (RGB 0, 255, 0) and leave every other pixel unchanged."
)
VQA_QUESTIONS = {
    "Zoology": "Which animal does this photo show?",
    "Botany": "Which plant does this photo show?",
    "Geography": "Which place does this photo show?",
}
VQA_CHOICES = 4


def _split_names(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


#: The feature extractor of the official Uni similarity (``eval_Similarity.py`` loads DINOv3 ViT-7B/16).
OFFICIAL_UNI_MODEL = "facebook/dinov3-vit7b16-pretrain-lvd1689m"
#: Metrics whose features come from the official extractors unless ``features=embed``.
FEATURE_METRICS = ("uni_generation", "puzzle")


class GirOptions(BaseModel):
    """``tasks``: comma-separated subset of the tasks (empty: every task the case folder holds).
    ``skip_roles``: roles this run does not bind; what needs them is skipped and counted.
    ``features``: ``official`` (default) scores Uni similarity with DINOv3 (``uni_model``, a local
    folder for transformers or a hub id already in the Hugging Face cache) and the Visual Puzzle FID
    with torchmetrics' InceptionV3 (``fid_weights``: a local weights file in torch-fidelity's format;
    empty for the standard file in torch's hub cache); a run never downloads them (`weights.py`).
    ``embed`` uses the run's embed role for both instead (a deviation, listed as such)."""

    model_config = ConfigDict(extra="forbid")

    tasks: str = Field("", description="comma-separated tasks to run (default: every task in the folder)")
    skip_roles: str = Field("", description="roles this run does not bind; what needs them is skipped and counted")
    features: Literal["official", "embed"] = Field(
        "official", description="official: DINOv3 (Uni) and InceptionV3 FID (puzzle); embed: the run's embed role"
    )
    uni_model: str = Field(
        OFFICIAL_UNI_MODEL, description="DINOv3 checkpoint for Uni similarity: local folder, or hub id already in the Hugging Face cache"
    )
    fid_weights: str = Field(
        "", description="InceptionV3 weights file (torch-fidelity format); empty: the standard file in torch's hub cache"
    )

    @field_validator("tasks")
    @classmethod
    def _known_tasks(cls, value: str) -> str:
        chosen: list[str] = []
        for name in _split_names(value):
            key = name.lower().replace("_", "").replace("-", "")
            task = TASK_ALIASES.get(key, name.lower())
            if task not in TASKS:
                raise ValueError(f"unknown task {name!r}; known tasks: {', '.join(TASKS)}")
            if task not in chosen:
                chosen.append(task)
        return ",".join(t for t in TASKS if t in chosen)

    @field_validator("skip_roles")
    @classmethod
    def _known_roles(cls, value: str) -> str:
        roles = {name.lower() for name in _split_names(value)}
        unknown = sorted(roles - set(ALL_ROLES))
        if unknown:
            raise ValueError(f"unknown role(s) {unknown}; GIR-Bench uses: {', '.join(ALL_ROLES)}")
        return ",".join(r for r in ALL_ROLES if r in roles)

    @property
    def task_list(self) -> list[str]:
        return _split_names(self.tasks)

    @property
    def skipped_roles(self) -> set[str]:
        return set(_split_names(self.skip_roles))

    def metric_roles(self, metric: str) -> tuple[str, ...]:
        """The roles `metric` needs: with official features, Uni and puzzle need no embed role."""
        roles = METRIC_ROLES[metric]
        if self.features == "official" and metric in FEATURE_METRICS:
            return tuple(r for r in roles if r != EMBED)
        return roles

    def unmet_roles(self, metric: str) -> list[str]:
        return [role for role in self.metric_roles(metric) if role in self.skipped_roles]


class UniScores(Scores):
    """Uni (the paired understanding and generation tasks): each category's score and the Overall."""

    understanding: dict[str, Number | None]
    generation: dict[str, Number | None]


class GirScores(Scores):
    """summary.json ``scores`` of a GIR-Bench run: the paper's groups (each with its Overall, None
    unless every metric of the group has a score), the Overall of the metrics that have one, and
    each metric's own summary (cases, failures, skips, umni's figure beside the official one)."""

    uni: UniScores
    t2i: dict[str, Number | None]
    edit: dict[str, Number | None]
    overall: Number | None
    #: the metrics the Overall averages
    overall_of: list[str]
    puzzle_fid: Number | None
    #: metric -> its summary (`_metric_summary`)
    metrics: dict[str, dict[str, Any]]
    failed_cases: int
    skip_roles: list[str]
    features: str
    deviations: list[dict[str, Any]]


@dataclass(frozen=True)
class VqaItem:
    """The understanding-side question of one Uni entity: which of `options` the photo shows."""

    question: str
    options: tuple[str, ...]
    answer: int
    image: Path


@dataclass(frozen=True)
class GirCase:
    """One case of any task: the validated record of `cases.py` plus what the graph needs besides.

    `prompt` is the Uni generation prompt or the perception target description; `vqa` the Uni question.
    """

    task: str
    id: str
    data: Any
    prompt: str | None = None
    vqa: VqaItem | None = None

    @property
    def category(self) -> str | None:
        return self.data.category if isinstance(self.data, UniCase) else None


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


def _digest(*parts: object) -> int:
    text = "\x1f".join(str(p) for p in parts).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big")


def _file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---------------------------------------------------------------------------------------------------
# Loading


def image_root(root: Path) -> Path:
    """Where the image sets sit: the folder itself, or its ``reference/`` folder (the hub layout)."""
    if any((root / name).is_dir() for name in _IMAGE_SETS):
        return root
    if (root / "reference").is_dir():
        return root / "reference"
    return root


def _has_file(root: Path, name: str) -> bool:
    try:
        find_task_file(root, name)
    except InputError:
        return False
    return True


def present_tasks(root: Path) -> list[str]:
    """The tasks a case folder holds, in table order."""
    images = image_root(root)
    found = {
        "uni": any((images / c).is_dir() for c in UNI_CATEGORIES),
        "numerical": _has_file(root, NUMERICAL_FILE),
        "spatial": _has_file(root, SPATIAL_FILE),
        "text": _has_file(root, TEXT_FILE),
        "puzzle": (images / "VisualPuzzle").is_dir(),
        "sudoku": (images / "VisualLogic" / "sudoku").is_dir(),
        "perception": (images / "ReasoningPerception").is_dir(),
    }
    return [task for task in TASKS if found[task]]


_WHERE = {
    "uni": "a Zoology/, Botany/ or Geography/ folder",
    "numerical": NUMERICAL_FILE,
    "spatial": SPATIAL_FILE,
    "text": TEXT_FILE,
    "puzzle": "a VisualPuzzle/ folder",
    "sudoku": "a VisualLogic/sudoku/ folder",
    "perception": "a ReasoningPerception/ folder",
}


def _vqa_items(entities: Sequence[UniCase], notes: list[Note]) -> dict[str, VqaItem]:
    """A question per entity; distractors are other entities, same category first, in an order fixed
    by a hash of the two ids (so adding an entity elsewhere does not reshuffle every question)."""
    items: dict[str, VqaItem] = {}
    for entity in entities:
        answer = entity.display_name
        others = sorted(
            (e for e in entities if e.id != entity.id and e.display_name.lower() != answer.lower()),
            key=lambda e: (e.category != entity.category, _digest("distractor", entity.id, e.id)),
        )
        distractors: list[str] = []
        for other in others:
            if other.display_name.lower() not in {d.lower() for d in distractors}:
                distractors.append(other.display_name)
            if len(distractors) == VQA_CHOICES - 1:
                break
        if not distractors:
            notes.append(Note(entity.id, "vqa", "no other entity to draw a distractor from; the question is not asked"))
            continue
        position = _digest("answer", entity.id) % (len(distractors) + 1)
        options = distractors[:position] + [answer] + distractors[position:]
        items[entity.id] = VqaItem(VQA_QUESTIONS[entity.category], tuple(options), position, entity.references[0])
    return items


def _load_uni(root: Path, notes: list[Note]) -> list[GirCase]:
    images = image_root(root)
    categories = [c for c in UNI_CATEGORIES if (images / c).is_dir()]
    entities = load_uni_cases(images, categories)
    prompts: dict[str, dict[str, str]] = {}
    for category in categories:
        name = f"{category}.json"
        if _has_file(root, name):
            prompts[category] = load_prompt_map(find_task_file(root, name))
            known = {str(e.entity_id) for e in entities if e.category == category}
            for stray in sorted(set(prompts[category]) - known):
                notes.append(Note(f"{category}/{stray}", "prompt", f"{name} has a prompt for id {stray}, but no {category}/{stray}_<name>/ folder"))
        else:
            notes.append(Note(category, "prompt", f"no {name}; the generation side of {category} is not run"))
    vqa = _vqa_items(entities, notes)
    return [
        GirCase("uni", f"uni/{e.id}", e, prompts.get(e.category, {}).get(str(e.entity_id)), vqa.get(e.id))
        for e in entities
    ]


def _load_perception(root: Path, skipped: list[Skipped]) -> list[GirCase]:
    images = image_root(root)
    targets = load_prompt_map(find_task_file(root, PERCEPTION_FILE)) if _has_file(root, PERCEPTION_FILE) else {}
    cases = []
    for case in load_perception_cases(images):
        gir = GirCase("perception", f"perception/{case.id}", case, targets.get(case.id))
        if gir.prompt is None:
            skipped.append(Skipped(gir.id, f"no target description for id {case.id} in {PERCEPTION_FILE}"))
            continue
        cases.append(gir)
    return cases


def load_tasks(root: Path, options: GirOptions) -> CaseSet[GirCase]:
    """Every case of the chosen tasks; cases with missing images or unbound roles are `skipped`.

    When every case is skipped there is nothing to score: that is an input error (exit 2), as for
    an empty UmniBench case file, not a run that reports no score.
    """
    root = Path(os.path.abspath(root))
    if not root.is_dir():
        raise InputError(
            "GIR-Bench cases are a folder (holding prompt/, Zoology/, VisualLogic/ …), not a file", path=root
        )
    present = present_tasks(root)
    wanted = options.task_list or present
    absent = [t for t in wanted if t not in present]
    if absent:
        raise InputError(
            "asked for task(s) the folder does not hold: " + "; ".join(f"{t} needs {_WHERE[t]}" for t in absent),
            path=root,
            field="tasks",
        )
    if not wanted:
        raise InputError(
            "no GIR-Bench task found; expected " + ", ".join(_WHERE[t] for t in TASKS) + " (task files may sit in prompt/)",
            path=root,
        )
    images = image_root(root)
    cases: list[GirCase] = []
    skipped: list[Skipped] = []
    notes: list[Note] = []
    for task in wanted:
        if task == "uni":
            loaded = _load_uni(root, notes)
        elif task == "numerical":
            loaded = [GirCase(task, f"numerical/{c.id}", c) for c in load_numerical_cases(find_task_file(root, NUMERICAL_FILE))]
        elif task == "spatial":
            loaded = [GirCase(task, f"spatial/{c.id}", c) for c in load_spatial_cases(find_task_file(root, SPATIAL_FILE))]
            notes += [Note(case.id, where, message) for case in loaded for where, message in case.data.notes()]
        elif task == "text":
            loaded = [GirCase(task, f"text/{c.id}", c) for c in load_text_cases(find_task_file(root, TEXT_FILE))]
        elif task == "puzzle":
            loaded = [GirCase(task, f"puzzle/{c.id:03d}", c) for c in load_puzzle_cases(images)]
        elif task == "sudoku":
            loaded = [GirCase(task, f"sudoku/{c.id}", c) for c in load_visual_logic_cases(images)]
        else:
            loaded = _load_perception(root, skipped)
        for case in loaded:
            reason = _skip_reason(case, options)
            if reason:
                skipped.append(Skipped(case.id, reason))
            else:
                cases.append(case)
    if not cases:
        reasons = Counter(s.reason for s in skipped)
        raise InputError(
            "no GIR-Bench case can be scored: "
            + "; ".join(f"{n} case(s): {reason}" for reason, n in reasons.most_common(5)),
            path=root,
        )
    return CaseSet(path=root, cases=cases, skipped=skipped, notes=notes)


def case_metrics(case: GirCase) -> list[str]:
    return ["uni_understanding", "uni_generation"] if case.task == "uni" else [case.task]


def _metric_unavailable(case: GirCase, metric: str, options: GirOptions) -> str | None:
    """Why `metric` is not run for `case` (None: it runs)."""
    unmet = options.unmet_roles(metric)
    if unmet:
        return f"{' and '.join(unmet)} role not bound (skip_roles)"
    if metric == "uni_generation" and case.prompt is None:
        return f"no generation prompt for this entity in prompt/{case.category}.json"
    if metric == "uni_understanding" and case.vqa is None:
        return "no question: no other entity to draw distractors from"
    return None


def _skip_reason(case: GirCase, options: GirOptions) -> str | None:
    data = case.data
    if not isinstance(data, UniCase) and hasattr(data, "image_paths"):
        gone = missing_images([data])
        if gone:
            return "missing image(s): " + ", ".join(shown_missing(str(path), path) for _, path in gone)
    reasons = [_metric_unavailable(case, m, options) for m in case_metrics(case)]
    if all(reasons):
        return "; ".join(dict.fromkeys(r for r in reasons if r))
    return None


# ---------------------------------------------------------------------------------------------------
# Scoring nodes


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


# ---------------------------------------------------------------------------------------------------
# Records


def _first_failure(outcomes: Mapping[str, Outcome], nodes: Iterable[Ref]) -> dict[str, Any] | None:
    found = first_failure(outcomes, nodes)
    if found is None:
        return None
    nid, failure = found
    return {"node": nid, "kind": failure.kind, "message": failure.message}


def _entry(outcomes: Mapping[str, Outcome], score: Ref | None, related: Sequence[Ref]) -> dict[str, Any]:
    """A metric's record entry from its scoring node; a failure anywhere upstream is named, not scored."""
    assert score is not None
    score_node = score.node
    outcome = outcomes[score_node]
    if outcome.ok:
        detail = dict(outcome.value)
        return {"status": "scored", "value": float(detail.pop("score")), "detail": detail}
    if outcome.status == "skipped":
        return {"status": "skipped", "reason": "an input node was skipped"}
    failure = _first_failure(outcomes, [*related, score]) or {"node": score_node, "kind": "internal", "message": outcome.status}
    return {"status": "failed", "failure": failure["kind"], "node": failure["node"], "message": failure["message"]}


def _image_sha(outcomes: Mapping[str, Outcome], node: Ref | None) -> str | None:
    outcome = outcomes.get(node.node) if node is not None else None
    image = outcome.image if outcome is not None else None
    return image.sha256 if image is not None else None


# ---------------------------------------------------------------------------------------------------
# Summary helpers


def _mean(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if values else None


def _metric_summary(metric: str, entries: list[dict[str, Any]], options: GirOptions, *, set_statistics: bool = True) -> dict[str, Any]:
    scored = [e for e in entries if e["status"] == "scored"]
    failed = [e for e in entries if e["status"] == "failed"]
    skipped = [e for e in entries if e["status"] == "skipped"]
    out: dict[str, Any] = {
        "score": None,
        "cases": len(entries),
        "scored": len(scored),
        "failed": len(failed),
        "failures": dict(sorted(Counter(e["failure"] for e in failed).items())),
        "skipped": len(skipped),
        "skip_reasons": dict(sorted(Counter(e["reason"] for e in skipped).items())),
        "note": None,
    }
    if metric == "puzzle" and not set_statistics:  # a bootstrap resample (`summarize_resample`)
        out.update(fid=None, note="the Fréchet distance is not recomputed for resamples")
    elif metric == "puzzle":
        result = scoring.puzzle_score(entries, official=options.features == "official")
        out.update(score=result["score"], fid=result["fid"], note=result["note"] if scored else None)
    elif metric.startswith("uni_"):
        by_category: dict[str, list[float]] = defaultdict(list)
        for e in scored:
            by_category[e["category"]].append(e["value"])
        out["categories"] = {c: _mean(by_category[c]) for c in UNI_CATEGORIES}
        present = [v for v in out["categories"].values() if v is not None]
        out["score"] = _mean(present)  # the paper's Overall: the mean of the category scores
    else:
        out["score"] = _mean([e["value"] for e in scored])
    if metric in ("sudoku", "spatial", "numerical"):  # umni's figure beside the official one (deviations.py)
        cells = [e["detail"].get("umni_score") for e in scored]
        known = [v for v in cells if v is not None]
        out["umni_score"] = _mean(known)
        out["umni_scored"] = len(known)
    if not entries:
        unmet = options.unmet_roles(metric)
        if options.task_list and METRIC_TASK[metric] not in options.task_list:
            out["note"] = "not selected (--option tasks)"
        elif unmet:
            out["note"] = f"not run: {' and '.join(unmet)} role not bound (skip_roles)"
        else:
            out["note"] = "no cases"
    elif not scored and out["note"] is None:
        if len(skipped) == len(entries):
            out["note"] = "not run: " + "; ".join(out["skip_reasons"])
        else:
            out["note"] = "no case could be scored"
    return out


def _group_overall(metrics: dict[str, dict[str, Any]], keys: Sequence[str]) -> float | None:
    """The paper's group Overall, only when every metric of the group has a score (else not comparable)."""
    values = [metrics[k]["score"] for k in keys]
    return None if any(v is None for v in values) else float(np.mean(values))


def _fmt(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


# ---------------------------------------------------------------------------------------------------
# The protocol


class GirBench(Protocol[GirCase, GirOptions, dict[str, Any], GirScores]):
    name = "girbench"
    title = "GIR-Bench: reasoning-centric generation and editing"
    roles = ALL_ROLES
    Options = GirOptions

    def bundled_cases(self) -> Path:
        from umni_cases import bundled

        return bundled("girbench")

    def adapt(self, options: GirOptions, bound_roles: Iterable[str]) -> GirOptions:
        """The options with every role this run leaves unbound added to ``skip_roles``.

        `build` cannot see the bindings, so a run that lacks, say, a detector would fail graph
        validation. Calling this before `load` (with the bound role names) turns that into counted,
        stated skips instead.
        """
        bound = set(bound_roles)
        missing = {role for role in ALL_ROLES if role not in bound}
        return GirOptions(**{**options.model_dump(), "skip_roles": ",".join(sorted(options.skipped_roles | missing))})

    def preflight(self, cases: Sequence[GirCase], options: GirOptions) -> list[str]:
        """With official features, the DINOv3 and InceptionV3 weights the cases need must be on this
        machine (`weights.missing_extractors`): a run never downloads them case by case."""
        if options.features != "official":
            return []
        uni = any(isinstance(c.data, UniCase) and _metric_unavailable(c, "uni_generation", options) is None for c in cases)
        puzzle = any(isinstance(c.data, PuzzleCase) for c in cases)
        return missing_extractors(options.uni_model if uni else None, options.fid_weights if puzzle else None)

    def case_schema(self) -> dict[str, Any]:
        """JSON Schemas of the files a GIR-Bench folder holds, keyed by where each file sits (the
        folder itself is not one record type, so the base class's single-record schema does not apply)."""
        from pydantic import TypeAdapter

        from .cases import PromptRecord, SudokuSpec

        files = {
            NUMERICAL_FILE: list[NumericalCase],
            SPATIAL_FILE: list[SpatialCase],
            TEXT_FILE: list[TextCase],
            PERCEPTION_FILE: list[PromptRecord],
            **{f"{c}.json": list[PromptRecord] for c in UNI_CATEGORIES},
            "VisualLogic/sudoku/<id>.json": SudokuSpec,
        }
        return {
            "title": "GIR-Bench case folder (task files under prompt/ or reference/prompt/)",
            "type": "object",
            "properties": {name: TypeAdapter[Any](kind).json_schema() for name, kind in files.items()},
        }

    def load(self, path: Path, options: GirOptions) -> CaseSet[GirCase]:
        return load_tasks(Path(path), options)

    def case_id(self, case: GirCase) -> str:
        return case.id

    # ------------------------------------------------------------------------------ graphs
    def build(self, case: GirCase, options: GirOptions) -> Graph[GirHandles]:
        g: Graph[GirHandles] = Graph(case.id)
        data = case.data
        h = GirHandles()
        if isinstance(data, UniCase):
            h = self._build_uni(g, case, options)
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
            image = g.edit("image", ImageFile(data.question_image), PUZZLE_INSTRUCTION)
            if options.features == "official":
                weights = {"fid_weights": options.fid_weights or None}
                solution = {"solution": data.solution_image}
                h = GirHandles(image, features=_score(g, "features", scoring.puzzle_features, weights, files=solution, output=image))
            else:
                output = g.tool("embed/output", EMBED, image)
                h = GirHandles(image, embeds=(output, g.tool("embed/solution", EMBED, ImageFile(data.solution_image))))
        elif isinstance(data, VisualLogicCase):
            h = self._build_sudoku(g, data)
        elif isinstance(data, PerceptionCase):
            assert case.prompt is not None
            image = g.edit("image", ImageFile(data.image), PERCEPTION_INSTRUCTION.format(target=case.prompt))
            files = {"mask": data.mask, "image": data.image}
            h = GirHandles(image, _score(g, "score", scoring.score_perception, {}, version="2", files=files, edited=image), (image,))
        return g.with_handles(h)

    def _build_uni(self, g: Graph[GirHandles], case: GirCase, options: GirOptions) -> GirHandles:
        data: UniCase = case.data
        h = GirHandles()
        if _metric_unavailable(case, "uni_generation", options) is None:
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
        if _metric_unavailable(case, "uni_understanding", options) is None:
            assert case.vqa is not None
            h = replace(h, vqa=g.answer("vqa", [ImageFile(case.vqa.image), case.vqa.question], list(case.vqa.options)))
        return h

    def _build_sudoku(self, g: Graph[GirHandles], data: VisualLogicCase) -> GirHandles:
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

    # ------------------------------------------------------------------------------ records
    def record(self, case: GirCase, outcomes: Mapping[str, Outcome], options: GirOptions) -> dict[str, Any]:
        h: GirHandles = self.handles(case, outcomes, options)
        data = case.data
        rec: dict[str, Any] = {"case_id": case.id, "task": case.task, "source_id": str(data.id)}
        metrics: dict[str, Any] = {}
        if isinstance(data, UniCase):
            rec.update(category=data.category, entity=data.display_name, prompt=case.prompt)
            metrics["uni_understanding"] = self._vqa_entry(case, outcomes, h.vqa, options)
            reason = _metric_unavailable(case, "uni_generation", options)
            if reason is None:
                metrics["uni_generation"] = _entry(outcomes, h.score, h.related)
            else:
                metrics["uni_generation"] = {"status": "skipped", "reason": reason}
            for entry in metrics.values():
                entry["category"] = data.category
        elif isinstance(data, PuzzleCase):
            rec["instruction"] = PUZZLE_INSTRUCTION
            metrics["puzzle"] = self._puzzle_entry(outcomes, h)
        else:
            rec["prompt" if case.task in T2I_METRICS else "instruction"] = self._text_of(case)
            metrics[case.task] = _entry(outcomes, h.score, h.related)
            if isinstance(data, TextCase):
                rec["target_text"] = data.text
        rec["image"] = _image_sha(outcomes, h.image)
        rec["metrics"] = metrics
        rec["nodes"] = node_status(outcomes)
        return rec

    @staticmethod
    def _text_of(case: GirCase) -> str:
        data = case.data
        if isinstance(data, VisualLogicCase):
            return SUDOKU_INSTRUCTION.format(n=data.spec.grid_size)
        if isinstance(data, PerceptionCase):
            return PERCEPTION_INSTRUCTION.format(target=case.prompt)
        return data.prompt

    @staticmethod
    def _vqa_entry(case: GirCase, outcomes: Mapping[str, Outcome], vqa: Ref | None, options: GirOptions) -> dict[str, Any]:
        reason = _metric_unavailable(case, "uni_understanding", options)
        if reason is not None:
            return {"status": "skipped", "reason": reason}
        assert case.vqa is not None and vqa is not None
        outcome = outcomes[vqa.node]
        if not outcome.ok or outcome.output is None:
            failure = _first_failure(outcomes, [vqa]) or {"kind": outcome.status, "message": outcome.status}
            return {"status": "failed", "failure": failure["kind"], "node": vqa.node, "message": failure["message"]}
        predicted = int(outcome.output["index"])
        detail = {
            "question": case.vqa.question,
            "options": list(case.vqa.options),
            "answer": case.vqa.answer,
            "predicted": predicted,
            "mode": outcome.output.get("mode"),
            "reference": case.vqa.image.name,
        }
        return {"status": "scored", "value": 1.0 if predicted == case.vqa.answer else 0.0, "detail": detail}

    @staticmethod
    def _puzzle_entry(outcomes: Mapping[str, Outcome], h: GirHandles) -> dict[str, Any]:
        assert h.image is not None
        if h.features is not None:  # official: one compute node holds both feature vectors
            features = outcomes[h.features.node]
            if features.ok:
                return {"status": "scored", "value": None, "features": dict(features.value)}
            failure = _first_failure(outcomes, [h.image, h.features])
            if failure is None:
                return {"status": "skipped", "reason": "an input node was skipped"}
            return {"status": "failed", "failure": failure["kind"], "node": failure["node"], "message": failure["message"]}
        assert h.embeds is not None
        output, solution = outcomes[h.embeds[0].node], outcomes[h.embeds[1].node]
        if output.ok and solution.ok:
            return {"status": "scored", "value": None, "features": {"output": output.value, "solution": solution.value}}
        failure = _first_failure(outcomes, [h.image, *h.embeds])
        if failure is None:
            return {"status": "skipped", "reason": "an input node was skipped"}
        return {"status": "failed", "failure": failure["kind"], "node": failure["node"], "message": failure["message"]}

    # ------------------------------------------------------------------------------ summary
    def summarize(self, records: list[dict[str, Any]], options: GirOptions) -> GirScores:
        return self._summarize(records, options, set_statistics=True)

    def summarize_resample(self, records: list[dict[str, Any]], options: GirOptions) -> GirScores:
        """A bootstrap resample's scores without the puzzle's Fréchet distance: a set statistic whose
        every computation takes seconds to a minute (torchmetrics' 2048-d eigen-decomposition), so
        300 of them made a run's finish take many minutes. Where the full formula would have
        computed it, the Overall (which averages it in) is left out too; the Edit Overall already
        is, having no puzzle score. Those cells carry no interval."""
        scores = self._summarize(records, options, set_statistics=False)
        puzzles = sum(1 for r in records if r.get("metrics", {}).get("puzzle", {}).get("status") == "scored")
        return scores.model_copy(update={"overall": None}) if puzzles >= 2 else scores

    def unresampled(self, scores: Mapping[str, Any], options: GirOptions) -> dict[str, str]:
        """With a puzzle score, the cells `summarize_resample` leaves out, and why."""
        if (scores.get("metrics", {}).get("puzzle") or {}).get("score") is None:
            return {}
        averaged = f"averages in Visual Puzzle, whose score ({PUZZLE_SET_STATISTIC}) no resample recomputes"
        own = f"Visual Puzzle's score is {PUZZLE_SET_STATISTIC}, which no resample recomputes"
        return {"metrics/puzzle/score": own, "metrics/puzzle/fid": own, "puzzle_fid": own, "edit/puzzle": own,
                "edit/overall": averaged, "overall": averaged}

    def stratum(self, record: dict[str, Any], options: GirOptions) -> str:
        """The case's task, a Uni entity's with its category: the Overall averages the tasks (and a
        Uni side its categories), and a group's Overall needs all three of its tasks."""
        return f"{record['task']}/{record['category']}" if record.get("category") else str(record["task"])

    def headline_parts(self, records: Sequence[dict[str, Any]], options: GirOptions) -> HeadlineParts | str:
        """Overall = the mean of the scored tasks' scores, a Uni side's score the mean of its
        categories' means: each task (each Uni side × category) a component, weighted 1 / tasks
        (÷ the side's categories), a scored case adding its value and a count of one. None with a
        puzzle score: it is a statistic of the whole set, of which no case has a share."""
        cases: list[dict[str, tuple[float, float]]] = []
        for record in records:
            terms: dict[str, tuple[float, float]] = {}
            for key, entry in record.get("metrics", {}).items():
                scored = entry.get("status") == "scored"
                if key == "puzzle" and scored:
                    return f"the Overall averages in Visual Puzzle, whose score is {PUZZLE_SET_STATISTIC}: no case has a share of it"
                component = f"{key}/{entry.get('category')}" if key.startswith("uni_") else key
                terms[component] = (float(entry["value"]), 1.0) if scored else (0.0, 0.0)
            cases.append(terms)
        counted = sorted({k for terms in cases for k, (_, count) in terms.items() if count})
        tasks = {k.split("/")[0] for k in counted}
        weights = {k: 1.0 / len(tasks) / sum(c.split("/")[0] == k.split("/")[0] for c in counted) for k in counted}
        return HeadlineParts(weights, cases)

    def _summarize(self, records: list[dict[str, Any]], options: GirOptions, *, set_statistics: bool) -> GirScores:
        by_metric: dict[str, list[dict[str, Any]]] = {key: [] for key, _, _ in METRICS}
        for record in records:
            for key, entry in record.get("metrics", {}).items():
                by_metric.setdefault(key, []).append(entry)
        metrics = {key: _metric_summary(key, by_metric[key], options, set_statistics=set_statistics) for key, _, _ in METRICS}
        scored = [key for key, _, _ in METRICS if metrics[key]["score"] is not None]
        und, gen = metrics["uni_understanding"], metrics["uni_generation"]
        return GirScores(
            uni=UniScores(
                understanding={**und["categories"], "overall": und["score"]},
                generation={**gen["categories"], "overall": gen["score"]},
            ),
            t2i={**{k: metrics[k]["score"] for k in T2I_METRICS}, "overall": _group_overall(metrics, T2I_METRICS)},
            edit={**{k: metrics[k]["score"] for k in EDIT_METRICS}, "overall": _group_overall(metrics, EDIT_METRICS)},
            overall=_mean([metrics[k]["score"] for k in scored]),
            overall_of=scored,
            puzzle_fid=metrics["puzzle"].get("fid"),
            metrics=metrics,
            failed_cases=sum(m["failed"] for m in metrics.values()),
            skip_roles=sorted(options.skipped_roles),
            features=options.features,
            deviations=deviations(metrics, options.features),
        )

    def tables(self, summary: dict[str, Any]) -> list[tuple[str, list[str], list[list[Any]]]]:
        s = summary["scores"]
        uni_rows = [
            [side.capitalize(), *(s["uni"][side][c] for c in UNI_CATEGORIES), s["uni"][side]["overall"]]
            for side in ("understanding", "generation")
        ]
        main_row = [*(s["t2i"][k] for k in T2I_METRICS), s["t2i"]["overall"], *(s["edit"][k] for k in EDIT_METRICS), s["edit"]["overall"]]
        main_header = [*(METRIC_TITLES[k] for k in T2I_METRICS), "T2I Overall", *(METRIC_TITLES[k] for k in EDIT_METRICS), "Edit Overall"]
        detail_rows = [
            [METRIC_TITLES[key], m["score"], m["scored"], m["failed"], m["skipped"], m["note"] or ""]
            for key, m in ((k, s["metrics"][k]) for k in METRIC_TITLES if k in s["metrics"])
        ]
        return [
            ("GIR-Bench-Uni (understanding: VQA accuracy; generation: feature similarity)", ["Side", *UNI_CATEGORIES, "Overall"], uni_rows),
            ("GIR-Bench-T2I and GIR-Bench-Edit", main_header, [main_row]),
            (
                f"Cases per metric (overall over scored metrics: {_fmt(s['overall'])})",
                ["Metric", "Score", "Scored", "Failed", "Skipped", "Note"],
                detail_rows,
            ),
        ]

    def views(self, record: dict[str, Any]) -> list[View]:
        views = []
        metrics = record.get("metrics", {})
        for key, entry in sorted(metrics.items(), key=lambda item: list(METRIC_TITLES).index(item[0]) if item[0] in METRIC_TITLES else 99):
            rows: list[tuple[str, str]] = []
            for field in ("prompt", "instruction", "target_text", "entity"):
                if record.get(field):
                    rows.append((field.replace("_", " "), str(record[field])))
            verdict: bool | None = None
            if entry["status"] == "scored":
                if entry.get("value") is not None:
                    rows.append(("score", _fmt(entry["value"])))
                    verdict = entry["value"] >= 0.5
                for name, value in (entry.get("detail") or {}).items():
                    rows.append((name.replace("_", " "), _fmt(value)))
                if "features" in entry:
                    rows.append(("features", f"{len(entry['features']['output'])}-d, scored over the whole set"))
            elif entry["status"] == "failed":
                rows.append(("failed", f"{entry['failure']} at node {entry.get('node')}: {entry.get('message', '')}"))
            else:
                rows.append(("not run", entry.get("reason", "")))
            image = record.get("image") if key != "uni_understanding" else None
            views.append(View(METRIC_TITLES.get(key, key), image, rows, verdict))
        return views


PROTOCOL = GirBench()
