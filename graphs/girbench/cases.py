"""A GIR-Bench run's case and how a case folder becomes the cases of a run.

A case is a record of any of the seven tasks (read by `dataset`) plus what its graph needs besides:
the Uni generation prompt or the perception target description, and the Uni question. Cases with
missing images, or whose every metric needs a role the run does not bind, are skipped with the
reason and counted; when nothing is left to score, loading fails (exit 2).
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from umni.plugin import CaseSet, InputError, Note, Skipped, shown_missing

from .dataset import (
    NUMERICAL_FILE,
    SPATIAL_FILE,
    TEXT_FILE,
    UNI_CATEGORIES,
    NumericalCase,
    PromptRecord,
    PuzzleCase,
    SpatialCase,
    SudokuSpec,
    TextCase,
    UniCase,
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
from .options import GirOptions
from .prompts import VQA_CHOICES, VQA_QUESTIONS
from .tasks import TASKS
from .weights import missing_extractors

#: The set folders an image root holds (the dataset's ``reference/`` folder, or the case folder).
_IMAGE_SETS = (*UNI_CATEGORIES, "ReasoningPerception", "VisualLogic", "VisualPuzzle")
PERCEPTION_FILE = "ReasoningPerception.json"


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


def _digest(*parts: object) -> int:
    text = "\x1f".join(str(p) for p in parts).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big")


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
            loaded = [GirCase(task, f"puzzle/{c.id:03d}", c) for c in load_puzzle_cases(images, options.puzzle_inputs)]
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


def metric_unavailable(case: GirCase, metric: str, options: GirOptions) -> str | None:
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
    no_input = data.missing_input() if isinstance(data, PuzzleCase) else None
    if not isinstance(data, UniCase) and hasattr(data, "image_paths"):
        gone = missing_images([data])
        if gone:
            missing = "missing image(s): " + ", ".join(shown_missing(str(path), path) for _, path in gone)
            return f"{no_input}; {missing}" if no_input else missing
    if no_input:
        return no_input
    reasons = [metric_unavailable(case, m, options) for m in case_metrics(case)]
    if all(reasons):
        return "; ".join(dict.fromkeys(r for r in reasons if r))
    return None


def case_schema() -> dict[str, Any]:
    """JSON Schemas of the files a GIR-Bench folder holds, keyed by where each file sits (the
    folder itself is not one record type, so the base class's single-record schema does not apply)."""
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


def missing_weights(cases: Sequence[GirCase], options: GirOptions) -> list[str]:
    """With official features, the DINOv3 and InceptionV3 weights the cases need must be on this
    machine (`weights.missing_extractors`): a run never downloads them case by case."""
    if options.features != "official":
        return []
    uni = any(isinstance(c.data, UniCase) and metric_unavailable(c, "uni_generation", options) is None for c in cases)
    puzzle = any(isinstance(c.data, PuzzleCase) for c in cases)
    return missing_extractors(options.uni_model if uni else None, options.fid_weights if puzzle else None)
