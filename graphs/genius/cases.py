"""A GENIUS run's case (a task) and how a ``--cases`` path becomes the tasks of a run.

The published record format and its loader are in `dataset`; a task is a case of it plus its VQA
probe options. The probe's distractors are other cases' rc_hints,
so they are chosen here, where the whole dataset is at hand, and not when a single graph is built.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from umni.plugin import CaseSet, InputError, Skipped, shown_missing

from .dataset import DATA_FILE, GeniusCase, GeniusRecord, load_dataset
from .prompts import probe_choices


@dataclass
class GeniusTask:
    """A loaded case plus what the run needs beyond the record: the VQA probe's options."""

    case: GeniusCase
    probe_options: list[str]
    probe_answer: int

    @property
    def key(self) -> str:
        return self.case.key


def load_tasks(path: Path) -> CaseSet[GeniusTask]:
    """Every case under `path`; a case whose context images are missing is skipped (counted and
    named in the run), not an input error, so one lost file does not stop a whole run."""
    root, dimensions = dataset_location(path)
    dataset = load_dataset(root, dimensions)
    missing: dict[str, list[Path]] = {}
    for key, image in dataset.missing_images:
        missing.setdefault(key, []).append(image)
    tasks: list[GeniusTask] = []
    skipped: list[Skipped] = []
    for case in dataset.cases:
        if case.key in missing:
            names = ", ".join(shown_missing(_shown_path(p, root), p) for p in missing[case.key])
            skipped.append(Skipped(case.key, f"missing context image file(s): {names}"))
            continue
        choices, answer = probe_choices(case, dataset.cases)
        tasks.append(GeniusTask(case, choices, answer))
    return CaseSet(path=path, cases=tasks, skipped=skipped)


def dataset_location(path: Path) -> tuple[Path, list[str] | None]:
    """The dataset root and dimensions for a --cases path: the dataset folder, one dimension's
    folder, or one dimension's test_data.json."""
    if path.is_file():
        if path.name != DATA_FILE:
            raise InputError(f"expected a GENIUS dataset folder, a dimension folder or a {DATA_FILE}", path=path)
        return path.parent.parent, [path.parent.name]
    if (path / DATA_FILE).is_file():
        return path.parent, [path.name]
    return path, None


def _shown_path(path: Path, root: Path) -> str:
    """A missing file named relative to the dataset, as the user laid it out, when it lies inside it."""
    try:
        return str(path.relative_to(root.resolve()))
    except ValueError:
        return str(path)


def case_schema() -> dict[str, Any]:
    """A case file (``<dimension>/test_data.json``) is a list of records; a task is built from one."""
    return TypeAdapter(list[GeniusRecord]).json_schema()
