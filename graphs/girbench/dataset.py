"""GIR-Bench case files and folders, loaded into validated cases.

The official data (a hub dataset, not bundled) has three JSON task files for text-to-image and
folder-based sets for the rest. The layout below is the one the official evaluation reads; the
directory loaders take the dataset's reference root (the folder holding ``Zoology/``,
``ReasoningPerception/`` …), the JSON loaders take the file (see `find_task_file`).

- ``prompt/NumericalReasoning.json``: ``[{id, prompt, task: {objects: [str], number: [int]}}]``
- ``prompt/SpatialLayout.json``: ``[{id, prompt, task: {objects, colors?, relative_position}}]``
- ``prompt/TextRendering.json``: ``[{id, prompt, text}]``
- ``Zoology|Botany|Geography/<id>_<name>/``: reference images of one entity (GIR-Bench-Uni)
- ``ReasoningPerception/{image,mask}/<id>.png``: input image and ground-truth mask
- ``VisualLogic/sudoku/<id>.json`` with ``question/<id>.png`` and ``answer/<id>.png``
- ``VisualPuzzle/solution/<id:03d>.png``: the original image; the shuffled tiles in the one other
  folder of numbered images beside it (``question/``, ``input/``, … or ``--option puzzle_inputs``)

Loaders collect every record problem before raising (`InputErrors`), naming file, record and field.
Image files that a case needs but that are absent are *not* load errors: `missing_images` lists
them, so a partial download can still be inspected and the runner can count those cases apart.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator, model_validator

from umni.plugin import InputError, field_errors, raise_if_any, read_json, read_json_records

from .metrics import normalize_text
from .validation import confined_path, is_image_file

UNI_CATEGORIES = ("Zoology", "Botany", "Geography")
NUMERICAL_FILE = "NumericalReasoning.json"
SPATIAL_FILE = "SpatialLayout.json"
TEXT_FILE = "TextRendering.json"


def _case_id(value: Any) -> Any:
    """Ids are integers (outputs are named ``<id:03d>.png``); digit strings are accepted as such."""
    if isinstance(value, bool):
        raise ValueError("id must be an integer, not a boolean")
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return value


CaseId = Annotated[int, BeforeValidator(_case_id), Field(ge=0, strict=True)]
NonEmpty = Annotated[str, Field(min_length=1)]


def _stripped_nonempty(value: str, what: str) -> str:
    if not value.strip():
        raise ValueError(f"{what} must not be blank")
    return value.strip()


class _Record(BaseModel):
    # Unknown keys are ignored: the hub files may carry bookkeeping fields we do not use.
    model_config = ConfigDict(extra="ignore", frozen=True)


def output_name(case_id: int) -> str:
    """File name the official tooling expects for a case's output image."""
    return f"{case_id:03d}.png"


# ---------------------------------------------------------------------------------------------------
# GIR-Bench-T2I: numerical reasoning


class NumericalTask(_Record):
    objects: list[NonEmpty] = Field(min_length=1)
    number: list[Annotated[int, Field(ge=1, strict=True)]] = Field(min_length=1)

    @field_validator("objects")
    @classmethod
    def _distinct_objects(cls, objects: list[str]) -> list[str]:
        cleaned = [_stripped_nonempty(o, "an object name") for o in objects]
        if len({o.lower() for o in cleaned}) != len(cleaned):
            raise ValueError(f"object names must be distinct, got {cleaned}")
        return cleaned

    @model_validator(mode="after")
    def _one_count_per_object(self) -> NumericalTask:
        if len(self.objects) != len(self.number):
            raise ValueError(f"{len(self.objects)} objects but {len(self.number)} counts; give one count per object")
        return self


class NumericalCase(_Record):
    """Draw objects whose counts follow from stated constraints (e.g. legs and heads)."""

    id: CaseId
    prompt: NonEmpty
    task: NumericalTask

    @property
    def expected_counts(self) -> dict[str, int]:
        return dict(zip(self.task.objects, self.task.number))


# ---------------------------------------------------------------------------------------------------
# GIR-Bench-T2I: spatial layout

#: The directions the official check knows, compared exactly (``"Left"`` is none of them).
DIRECTIONS = ("left", "right", "above", "up", "below", "down")


ObjectIndex = Annotated[int, Field(ge=0, strict=True)]


class Relation(_Record):
    """`subject` lies in `direction` of `object`; either side may be a group (list of names).

    A side may also be an integer: the position of the object in the task's (flattened) object list,
    which the official code accepts in place of the name. `direction` is kept as written: the official
    check compares it with `DIRECTIONS` exactly, and any other word (``"Left"``, ``"behind"``) or none
    makes a relation that never holds (`cases check` says so).
    """

    subject: ObjectIndex | NonEmpty | list[NonEmpty]
    direction: str | None = None
    object: ObjectIndex | NonEmpty | list[NonEmpty]

    def names(self) -> list[str | int]:
        out: list[str | int] = []
        for side in (self.subject, self.object):
            out += list(side) if isinstance(side, list) else [side]
        return out


class SpatialTask(_Record):
    objects: list[NonEmpty] | list[list[NonEmpty]] = Field(min_length=1)
    colors: list[str] | list[list[str]] | None = None
    #: May be empty: the case is then judged on detection alone, as officially.
    relative_position: list[Relation] = Field(default_factory=list)

    @field_validator("objects", "colors", mode="before")
    @classmethod
    def _not_mixed(cls, value: Any) -> Any:
        if isinstance(value, list) and value and len({isinstance(v, list) for v in value}) > 1:
            raise ValueError("must be all single entries or all groups (lists), not a mix")
        return value

    @property
    def flat_objects(self) -> list[str]:
        return [o for group in self.objects for o in ([group] if isinstance(group, str) else group)]

    @property
    def flat_colors(self) -> list[str]:
        if not self.colors:
            return []
        return [c for group in self.colors for c in ([group] if isinstance(group, str) else group)]

    @model_validator(mode="after")
    def _consistent(self) -> SpatialTask:
        # Names may repeat ("cube", "cube" with colours red and blue: two labels for the detector), as
        # the official code accepts; `SpatialCase.notes` points out labels that repeat exactly.
        names = self.flat_objects
        colors = self.flat_colors
        if colors and len(colors) != len(names):
            raise ValueError(f"{len(colors)} colors for {len(names)} objects; give one color per object ('' for none)")
        known = set(names)
        for i, rel in enumerate(self.relative_position):
            unknown = [n for n in rel.names() if (n not in known if isinstance(n, str) else n >= len(names))]
            if unknown:
                raise ValueError(f"relative_position[{i}] names {unknown}, which are not among the objects {names}")
        return self


class SpatialCase(_Record):
    """Arrange objects so that stated relations hold (checked on detected boxes)."""

    id: CaseId
    prompt: NonEmpty
    task: SpatialTask

    @property
    def labels(self) -> list[str]:
        """What the detector is asked for: ``"<color> <object>"`` when the case gives a color."""
        objects = self.task.flat_objects
        colors = self.task.flat_colors or [""] * len(objects)
        return [f"{color.strip()} {obj}" if color.strip() else obj for obj, color in zip(objects, colors)]

    def label_of(self, name: str) -> str:
        """The detector label of an object named in a relation; a name that repeats gets the label of
        its last occurrence, as the official name -> coloured-name map gives it."""
        return dict(zip(self.task.flat_objects, self.labels))[name]

    def notes(self) -> list[tuple[str, str]]:
        """(field, message) for what makes this record unable to pass, though the official code
        loads and scores it: a direction it does not know, a label asked for twice."""
        out = []
        for i, rel in enumerate(self.task.relative_position):
            if rel.direction not in DIRECTIONS:
                out.append((
                    f"relative_position[{i}].direction",
                    f"{rel.direction!r} is not one of {', '.join(DIRECTIONS)} (compared exactly): officially the "
                    "relation never holds, so this case always scores 0",
                ))
        repeated = sorted({label for label in self.labels if self.labels.count(label) > 1})
        if repeated:
            out.append((
                "objects",
                f"the detector would be asked for {', '.join(map(repr, repeated))} more than once (no colour tells "
                "them apart): officially the case passes only with exactly one such box",
            ))
        return out

    @property
    def relations(self) -> list[tuple[str | list[str], str | None, str | list[str]]]:
        """Relations with object names replaced by detector labels, ready for `metrics.spatial_case`."""

        def side(s: int | str | list[str]) -> str | list[str]:
            if isinstance(s, int):
                return self.labels[s]
            return self.label_of(s) if isinstance(s, str) else [self.label_of(n) for n in s]

        return [(side(r.subject), r.direction, side(r.object)) for r in self.task.relative_position]


# ---------------------------------------------------------------------------------------------------
# GIR-Bench-T2I: text rendering


class TextCase(_Record):
    """Render a text the model must first infer from an implicit description."""

    id: CaseId
    prompt: NonEmpty
    text: NonEmpty

    @field_validator("text")
    @classmethod
    def _scorable(cls, text: str) -> str:
        if not normalize_text(text):
            raise ValueError(
                f"text {text!r} has no letters a-z or digits, so the OCR score could never credit it"
            )
        return text


def find_task_file(root: str | Path, name: str) -> Path:
    """Where a task JSON sits under a dataset root: ``prompt/<name>``, ``reference/prompt/<name>``
    (the hub download's ``dataset/`` folder), ``benchmark/prompt/<name>`` or ``<name>``."""
    root = Path(root)
    places = (root / "prompt", root / "reference" / "prompt", root / "benchmark" / "prompt", root)
    for candidate in (folder / name for folder in places):
        if candidate.is_file():
            return candidate
    raise InputError(f"{name} not found (looked in prompt/, reference/prompt/, benchmark/prompt/ and the root)", path=root)


def load_numerical_cases(path: str | Path) -> list[NumericalCase]:
    return read_json_records(path, NumericalCase)


def load_spatial_cases(path: str | Path) -> list[SpatialCase]:
    return read_json_records(path, SpatialCase)


def load_text_cases(path: str | Path) -> list[TextCase]:
    return read_json_records(path, TextCase)


# ---------------------------------------------------------------------------------------------------
# Prompts for the folder-based sets
#
# The released evaluation code reads only images for GIR-Bench-Uni and reasoning perception, so the
# generation prompt of an entity and the description of a perception target come from a JSON file
# shaped like the T2I files: ``prompt/<Category>.json`` (Zoology, Botany, Geography) and
# ``prompt/ReasoningPerception.json``, each ``[{id, prompt}]`` with ids matching the folder or file
# names. This layout is umni's; the hub dataset may keep these texts elsewhere.


def _text_id(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("id must be an integer or a string, not a boolean")
    if isinstance(value, int):
        return str(value)
    return value.strip() if isinstance(value, str) else value


class PromptRecord(_Record):
    """A prompt keyed by the id of a folder-based case (entity id, perception image name)."""

    id: Annotated[str, BeforeValidator(_text_id), Field(min_length=1)]
    prompt: NonEmpty

    @field_validator("prompt")
    @classmethod
    def _not_blank(cls, prompt: str) -> str:
        return _stripped_nonempty(prompt, "prompt")


def load_prompt_map(path: str | Path) -> dict[str, str]:
    """``id -> prompt`` from a ``[{id, prompt}]`` file; ids compare as text (``7`` and ``"7"`` agree)."""
    return {record.id: record.prompt for record in read_json_records(path, PromptRecord)}


# ---------------------------------------------------------------------------------------------------
# Folder-based sets


class ImageCase(_Record):
    """A case whose inputs or references are image files on disk."""

    def image_paths(self) -> list[tuple[str, Path]]:
        """(role, path) of every image the case needs."""
        raise NotImplementedError


class UniCase(ImageCase):
    """One real-world entity: generate it from an implicit prompt, compare with its references.

    `id` is ``<Category>/<entity id>`` because entity ids are only unique within a category.
    """

    id: str
    category: Literal["Zoology", "Botany", "Geography"]
    entity_id: int
    name: str
    folder: Path
    references: list[Path]

    @property
    def display_name(self) -> str:
        return self.name.replace("_", " ")

    def image_paths(self) -> list[tuple[str, Path]]:
        return [("reference", p) for p in self.references]


class PerceptionCase(ImageCase):
    """Paint the region a description points at solid green; scored by IoU with `mask`."""

    id: str
    image: Path
    mask: Path

    def image_paths(self) -> list[tuple[str, Path]]:
        return [("image", self.image), ("mask", self.mask)]


_GRID_FIELDS = ("grid", "solution", "puzzle", "question", "board", "answer")


class SudokuSpec(_Record):
    """The content of ``VisualLogic/sudoku/<id>.json``.

    The official scorer only reads ``grid_size`` and re-reads givens and answer from the rendered
    images; umni also accepts the grids themselves: ``grid`` (givens, 0 = empty; also read from
    ``puzzle``, ``question`` or ``board``) and ``solution`` (also ``answer``). Without them, build
    them with `metrics.digits_to_grid` from OCR of the question and answer images. Optional
    ``question_image`` / ``answer_image`` override the default image paths (relative to
    ``VisualLogic/``, and they must stay inside it).
    """

    grid_size: Annotated[int, Field(ge=2, le=9, strict=True)]
    grid: list[list[int]] | None = None
    solution: list[list[int]] | None = None
    question_image: str | None = None
    answer_image: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _aliases(cls, data: Any) -> Any:
        if isinstance(data, dict):
            # The official scorer reads only grid_size: a field of another shape (the hub files carry
            # the puzzle and answer as strings) is bookkeeping, not a grid, and is ignored.
            data = {k: v for k, v in data.items() if k not in _GRID_FIELDS or isinstance(v, list)}
            for alias in ("puzzle", "question", "board"):
                if "grid" not in data and alias in data:
                    data["grid"] = data.pop(alias)
            if "solution" not in data and "answer" in data:
                data["solution"] = data.pop("answer")
        return data

    @model_validator(mode="after")
    def _grids_fit(self) -> SudokuSpec:
        n = self.grid_size
        for name, grid, low in (("grid", self.grid, 0), ("solution", self.solution, 1)):
            if grid is None:
                continue
            if len(grid) != n or any(len(row) != n for row in grid):
                raise ValueError(f"{name} must be {n}x{n} (grid_size), got {len(grid)} rows of lengths {[len(r) for r in grid]}")
            bad = sorted({v for row in grid for v in row if not low <= v <= n})
            if bad:
                raise ValueError(f"{name} holds {bad}; allowed values are {low}..{n}")
        if self.grid is not None and not any(v == 0 for row in self.grid for v in row):
            raise ValueError("grid has no empty cell (0), so there is nothing to solve")
        if self.grid is not None and self.solution is not None:
            clashes = [
                (r, c) for r in range(n) for c in range(n) if self.grid[r][c] and self.grid[r][c] != self.solution[r][c]
            ]
            if clashes:
                raise ValueError(f"givens disagree with the solution at cells (row, col) {clashes}")
        return self


class VisualLogicCase(ImageCase):
    """Solve the sudoku in `question_image`; scored by OCR of the output against the solution."""

    id: str
    spec: SudokuSpec
    source: Path
    question_image: Path
    answer_image: Path

    def image_paths(self) -> list[tuple[str, Path]]:
        return [("question", self.question_image), ("answer", self.answer_image)]


class PuzzleCase(ImageCase):
    """Reassemble the shuffled tiles of `question_image`; scored by FID against `solution_image`."""

    id: int
    #: the shuffled input; None when no input folder holds this puzzle's image
    question_image: Path | None
    solution_image: Path
    #: where the input was looked for: the input folder, or every folder looked at when none was found
    input_folders: tuple[Path, ...] = ()

    def image_paths(self) -> list[tuple[str, Path]]:
        question = [("question", self.question_image)] if self.question_image is not None else []
        return [*question, ("solution", self.solution_image)]

    def missing_input(self) -> str | None:
        """Why the case has no input image, naming the folders tried (None: it has one)."""
        if self.question_image is not None:
            return None
        base = self.solution_image.parent.parent
        tried = ", ".join(_shown_folder(folder, base) for folder in self.input_folders)
        fix = f"name the folder of shuffled inputs with --option {PUZZLE_INPUTS_OPTION}=DIR"
        if len(self.input_folders) == 1:
            return f"no input image {self.id:03d}.png (or {self.id}.png) in {tried}; {fix}"
        where = f" (looked in {tried})" if tried else ""
        return f"no input image: no folder of numbered images beside {_shown_folder(base / PUZZLE_SOLUTIONS, base)}{where}; {fix}"


def _shown_folder(folder: Path, base: Path) -> str:
    """A folder as a skip reason names it: from ``VisualPuzzle/`` on when it lies inside it."""
    try:
        return f"{base.name}/{folder.relative_to(base).as_posix()}/"
    except ValueError:
        return f"{folder}/"


def _require_dir(path: Path) -> None:
    if not path.is_dir():
        raise InputError("directory not found", path=path)


def _sorted_ids(ids: Iterable[str]) -> list[str]:
    """Numeric ids in numeric order (2 before 10), then any others alphabetically."""
    return sorted(ids, key=lambda s: (0, int(s), s) if s.isdigit() else (1, 0, s))


_UNI_FOLDER = re.compile(r"^(\d+)_(.+)$")


def load_uni_cases(root: str | Path, categories: Sequence[str] = UNI_CATEGORIES) -> list[UniCase]:
    """One case per ``<Category>/<id>_<name>/`` folder, with its reference images (sorted by name).

    A folder not named ``<digits>_<name>``, a repeated id within a category and a folder without
    images are errors; loose files beside the folders are ignored.
    """
    # absolute first: the folders found below already carry the root, so a relative root would be
    # joined onto itself by `confined_path`
    root = Path(os.path.abspath(root))
    _require_dir(root)
    cases: list[UniCase] = []
    errors: list[InputError] = []
    for category in categories:
        if category not in UNI_CATEGORIES:
            raise InputError(f"unknown category {category!r}; expected one of {', '.join(UNI_CATEGORIES)}", path=root)
        cat_dir = root / category
        if not cat_dir.is_dir():
            errors.append(InputError("category directory not found", path=cat_dir))
            continue
        seen: dict[int, str] = {}
        for folder in sorted(p for p in cat_dir.iterdir() if p.is_dir()):
            match = _UNI_FOLDER.match(folder.name)
            if not match:
                errors.append(InputError("folder name must be <id>_<name>, e.g. 12_snow_leopard", path=folder))
                continue
            entity_id, name = int(match.group(1)), match.group(2)
            if entity_id in seen:
                errors.append(InputError(f"id {entity_id} already used by folder {seen[entity_id]}", path=folder))
                continue
            seen[entity_id] = folder.name
            folder_path = confined_path(root, folder, source=folder)
            refs = sorted(confined_path(root, p, source=folder) for p in folder.iterdir() if is_image_file(p))
            if not refs:
                errors.append(InputError("no reference images (png, jpg, jpeg, bmp, tif, tiff, webp)", path=folder))
                continue
            cases.append(
                UniCase(
                    id=f"{category}/{entity_id}",
                    category=category,  # type: ignore[arg-type]
                    entity_id=entity_id,
                    name=name,
                    folder=folder_path,
                    references=refs,
                )
            )
    raise_if_any(errors)
    return cases


def load_perception_cases(root: str | Path) -> list[PerceptionCase]:
    """One case per id found in ``ReasoningPerception/image/`` or ``mask/`` (``<id>.png``)."""
    base = Path(root) / "ReasoningPerception"
    _require_dir(base)
    ids: set[str] = set()
    for sub in ("image", "mask"):
        if (base / sub).is_dir():
            ids |= {p.stem for p in (base / sub).glob("*.png")}
    if not ids:
        raise InputError("no <id>.png files in image/ or mask/", path=base)
    return [
        PerceptionCase(
            id=i,
            image=confined_path(base, Path("image") / f"{i}.png", record=i, field="image"),
            mask=confined_path(base, Path("mask") / f"{i}.png", record=i, field="mask"),
        )
        for i in _sorted_ids(ids)
    ]


def load_visual_logic_cases(root: str | Path) -> list[VisualLogicCase]:
    """One case per ``VisualLogic/sudoku/<id>.json``; every file is validated before raising."""
    base = Path(root) / "VisualLogic"
    sudoku_dir = base / "sudoku"
    _require_dir(sudoku_dir)
    by_stem = {p.stem: p for p in sudoku_dir.glob("*.json")}
    files = [by_stem[stem] for stem in _sorted_ids(by_stem)]
    if not files:
        raise InputError("no <id>.json files", path=sudoku_dir)
    cases: list[VisualLogicCase] = []
    errors: list[InputError] = []
    for path in files:
        case_id = path.stem
        try:
            data = read_json(path)
            if not isinstance(data, dict):
                raise InputError(f"expected a JSON object, found {type(data).__name__}", path=path, record=case_id)
            spec = SudokuSpec.model_validate(data)
            question = confined_path(
                base, spec.question_image or f"question/{case_id}.png", source=path, record=case_id, field="question_image"
            )
            answer = confined_path(
                base, spec.answer_image or f"answer/{case_id}.png", source=path, record=case_id, field="answer_image"
            )
        except ValidationError as exc:
            errors.extend(field_errors(exc, path=path, record=case_id))
            continue
        except InputError as exc:
            errors.append(exc)
            continue
        cases.append(VisualLogicCase(id=case_id, spec=spec, source=path, question_image=question, answer_image=answer))
    raise_if_any(errors)
    return cases


#: The Visual Puzzle folder the official evaluation reads (``solution/<id:03d>.png``).
PUZZLE_SOLUTIONS = "solution"
#: The option that names the folder of shuffled inputs.
PUZZLE_INPUTS_OPTION = "puzzle_inputs"


def load_puzzle_cases(root: str | Path, inputs: str | Path | None = None) -> list[PuzzleCase]:
    """One case per id found in ``VisualPuzzle/solution/`` or the inputs folder.

    The official evaluation reads only ``solution/<id:03d>.png`` and names no folder for the shuffled
    inputs, so the inputs are the one other folder of numbered images beside ``solution/``
    (``question/`` in umni's bundled set, ``input/`` in some copies), or the folder `inputs` names
    (inside ``VisualPuzzle/`` unless absolute). An input may be named ``007.png`` or ``7.png``."""
    base = Path(root) / "VisualPuzzle"
    _require_dir(base)
    errors: list[InputError] = []
    tried, folder = _puzzle_input_folder(base, inputs)
    solutions = _numbered_images(confined_path(base, PUZZLE_SOLUTIONS, source=base, field="solution"), errors)
    found = _numbered_images(folder, errors) if folder is not None else {}
    raise_if_any(errors)
    ids = set(solutions) | set(found)
    if not ids:
        raise InputError(f"no <id>.png files in {PUZZLE_SOLUTIONS}/ or an input folder beside it", path=base)
    return [
        PuzzleCase(
            id=i,
            question_image=found.get(i),
            solution_image=confined_path(base, Path(PUZZLE_SOLUTIONS) / f"{i:03d}.png", record=i, field="solution_image"),
            input_folders=tried,
        )
        for i in sorted(ids)
    ]


def _puzzle_input_folder(base: Path, inputs: str | Path | None) -> tuple[tuple[Path, ...], Path | None]:
    """The folders tried for the shuffled inputs, and the one that holds them (None: none does)."""
    if inputs is not None:
        folder = base / inputs  # an absolute `inputs` stays as it is
        if not folder.is_dir():
            raise InputError(
                "the Visual Puzzle input folder is not a folder (a name inside VisualPuzzle/, or a path)",
                path=folder,
                field=PUZZLE_INPUTS_OPTION,
            )
        return (folder,), folder
    looked = tuple(sorted(p for p in base.iterdir() if p.is_dir() and p.name != PUZZLE_SOLUTIONS))
    holding = [p for p in looked if any(f.stem.isdigit() for f in p.glob("*.png"))]
    if len(holding) > 1:
        names = ", ".join(f"{p.name}/" for p in holding)
        raise InputError(
            f"several folders beside {PUZZLE_SOLUTIONS}/ hold numbered images ({names}): say which holds the "
            f"shuffled inputs with --option {PUZZLE_INPUTS_OPTION}=NAME",
            path=base,
        )
    return ((holding[0],), holding[0]) if holding else (looked, None)


def _numbered_images(folder: Path, errors: list[InputError]) -> dict[int, Path]:
    """``<id>.png`` files of `folder` by id (``007.png`` and ``7.png`` are both puzzle 7)."""
    if not folder.is_dir():
        return {}
    found: dict[int, Path] = {}
    for p in sorted(folder.glob("*.png")):
        if p.stem.isdigit():
            found.setdefault(int(p.stem), p)
        else:
            errors.append(InputError("puzzle image names must be a number (e.g. 007.png)", path=p))
    return found


def missing_images(cases: Iterable[PuzzleCase | UniCase | PerceptionCase | VisualLogicCase]) -> list[tuple[str, Path]]:
    """(case id, path) of every image a case needs that is not on disk, in case order."""
    missing = []
    for case in cases:
        for _role, path in case.image_paths():
            if not path.is_file():
                missing.append((str(case.id), path))
    return missing
