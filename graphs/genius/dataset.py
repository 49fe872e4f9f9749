"""The GENIUS dataset: the official record format, image references, and the dataset loader.

The official layout is ``dataset/<dimension>/test_data.json`` with the images of a dimension under
``dataset/<dimension>/images/``. A record interleaves text and images in ``context`` through
``<image:NAME>`` tags; ``NAME`` gets ``.png`` appended when it has no image extension and is looked up
under the dimension's ``images/`` folder. Every resolved path must stay inside the dataset folder, so
a case file cannot make umni read arbitrary files.

``rc_hint`` is the curated description of a correct output (the Rule Compliance judge's gold
standard). ``vc_hint`` (also spelled ``VC_hint``) is a string or a list of strings; each names one
context image with ``<image:NAME>`` whose identity the output must keep. Record shapes are read as the
official ``eval.py`` reads them: ``vc_hint`` is used when it is non-empty, else ``VC_hint``; hints are
stripped and empty ones dropped; a hint without an image tag stays a hint (it scores 0 in every round,
as officially) but has no reference image to judge against. A case has a Visual Consistency score
only when at least one hint names an image (``multi_semantic`` records have none).

Missing image files are not load errors: `load_dataset` lists them as (record, path) pairs so a run
can report them, because a generation without its context images would be meaningless.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    field_validator,
    model_validator,
)

from umni.plugin import InputError, InputErrors, confined_path, read_json_records

DIMENSIONS = ("implicit_pattern", "symbolic_constraint", "visual_constraint", "prior_conflicting", "multi_semantic")
#: Dimensions whose records carry no vc_hint, hence no Visual Consistency score.
DIMENSIONS_WITHOUT_VC = ("multi_semantic",)
#: The paper's names of the dimensions (table headers and report titles).
DIMENSION_TITLES = {
    "implicit_pattern": "Implicit Pattern",
    "symbolic_constraint": "Symbolic Constraint",
    "visual_constraint": "Visual Constraint",
    "prior_conflicting": "Prior-Conflicting",
    "multi_semantic": "Multi-Semantic",
}
DATA_FILE = "test_data.json"
IMAGES_FOLDER = "images"
IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".webp", ".gif", ".bmp")

#: ``<image:NAME>``; NAME may not contain angle brackets. Spaces around NAME are ignored.
IMAGE_TAG = re.compile(r"<image:\s*([^<>]*?)\s*>")


class GeniusRecord(BaseModel):
    """One record of ``test_data.json`` as written. Unknown extra fields are kept, not rejected,
    because the official files may carry fields umni does not use."""

    model_config = ConfigDict(extra="allow", frozen=True)

    id: StrictStr | StrictInt
    context: str
    instruction: str = Field(min_length=1)
    rc_hint: str = Field(min_length=1)
    vc_hint: StrictStr | list[StrictStr] | None = None

    @model_validator(mode="before")
    @classmethod
    def _one_vc_spelling(cls, data: object) -> object:
        """``vc_hint`` when it says something, else ``VC_hint`` (the official reading of both)."""
        if isinstance(data, dict) and "VC_hint" in data:
            data = dict(data)
            other = data.pop("VC_hint")
            if not data.get("vc_hint"):
                data["vc_hint"] = other
        return data

    @field_validator("id")
    @classmethod
    def _id_is_a_file_name(cls, value: str | int) -> str | int:
        text = str(value)
        if not text.strip() or text in {".", ".."} or "/" in text or "\\" in text:
            raise ValueError(f"id {value!r} cannot be used as an output file name")
        return value

    @property
    def vc_hints(self) -> list[str]:
        """The hints as the official scorer lists them: stripped, empty ones left out."""
        if not self.vc_hint:
            return []
        hints = [self.vc_hint] if isinstance(self.vc_hint, str) else self.vc_hint
        return [hint.strip() for hint in hints if hint.strip()]


@dataclass(frozen=True)
class ImageRef:
    """An image named by a tag: the name as written and where it resolves."""

    name: str
    path: Path


@dataclass(frozen=True)
class VCHint:
    """One Visual Consistency hint and the context image it is about (its first tag); ``None`` for a
    hint that names no image, which scores 0 in every round (official)."""

    text: str
    reference: ImageRef | None


@dataclass
class GeniusCase:
    """A record with its dimension and every image reference resolved."""

    dimension: str
    record: GeniusRecord
    images: dict[str, ImageRef]
    vc_hints: list[VCHint] = field(default_factory=list)

    @property
    def id(self) -> str | int:
        return self.record.id

    @property
    def has_vc(self) -> bool:
        """Visual Consistency applies when some hint names a reference image (official ``has_vc_task``)."""
        return any(hint.reference is not None for hint in self.vc_hints)

    @property
    def key(self) -> str:
        """``dimension/id``: unique across the dataset, used to name records in reports."""
        return f"{self.dimension}/{self.record.id}"

    @property
    def output_name(self) -> str:
        """The official output file name, ``<id>.png``."""
        return f"{self.record.id}.png"

    @property
    def context(self) -> str:
        return self.record.context

    @property
    def instruction(self) -> str:
        return self.record.instruction

    @property
    def rc_hint(self) -> str:
        return self.record.rc_hint

    @property
    def context_images(self) -> list[ImageRef]:
        """Context images in order of first mention, each once."""
        seen: dict[str, ImageRef] = {}
        for name in image_names(self.record.context):
            seen.setdefault(name, self.images[name])
        return list(seen.values())


@dataclass
class GeniusDataset:
    """Loaded cases of one or more dimensions, with the image files that do not exist."""

    root: Path
    cases: list[GeniusCase]
    missing_images: list[tuple[str, Path]]

    def by_dimension(self) -> dict[str, list[GeniusCase]]:
        grouped: dict[str, list[GeniusCase]] = {}
        for case in self.cases:
            grouped.setdefault(case.dimension, []).append(case)
        return grouped


def image_names(text: str) -> list[str]:
    """Every ``<image:NAME>`` name in `text`, in order (repeats kept)."""
    return [match.group(1) for match in IMAGE_TAG.finditer(text)]


def image_file_name(name: str) -> str:
    """The file name a tag refers to: ``.png`` is added when the name has no image extension."""
    return name if name.lower().endswith(IMAGE_EXTENSIONS) else name + ".png"


def resolve_image(name: str, dimension_dir: Path, root: Path) -> Path:
    """Where the image `name` of a dimension lives; raises ValueError if it would leave `root`."""
    file_name = image_file_name(name)
    if not name or PurePosixPath(file_name).is_absolute() or PureWindowsPath(file_name).is_absolute():
        raise ValueError(f"image name {name!r} must be a relative path")
    return confined_path(root, dimension_dir / IMAGES_FOLDER / file_name, inside="the dataset folder")


def load_dimension(root: str | Path, dimension: str) -> list[GeniusCase]:
    """Load ``<root>/<dimension>/test_data.json``, reporting every bad record in one InputErrors."""
    root = Path(root)
    if dimension not in DIMENSIONS:
        raise InputError(f"unknown GENIUS dimension {dimension!r}; known: {', '.join(DIMENSIONS)}", path=root)
    dimension_dir = root / dimension
    path = dimension_dir / DATA_FILE
    records = read_json_records(path, GeniusRecord, label=_record_label, allow_empty=True)
    cases: list[GeniusCase] = []
    errors: list[InputError] = []
    for index, record in enumerate(records):  # every record is valid here, so positions are the file's
        case, problems = _resolve(record, dimension, dimension_dir, root)
        label = _record_label(index, {"id": record.id})
        errors.extend(InputError(message, path=path, record=label, field=where) for where, message in problems)
        if case is not None:
            cases.append(case)
    if errors:
        raise InputErrors(errors)
    return cases


def load_dataset(root: str | Path, dimensions: Iterable[str] | None = None) -> GeniusDataset:
    """Load several dimensions (default: every known dimension that has a folder under `root`)."""
    root = Path(root)
    if not root.is_dir():
        raise InputError("GENIUS dataset folder not found", path=root)
    if dimensions is None:
        chosen = [d for d in DIMENSIONS if (root / d / DATA_FILE).is_file()]
        if not chosen:
            raise InputError(f"no <dimension>/{DATA_FILE} here; dimensions are: {', '.join(DIMENSIONS)}", path=root)
    else:
        chosen = list(dimensions)
    cases: list[GeniusCase] = []
    errors: list[InputError] = []
    for dimension in chosen:
        try:
            cases.extend(load_dimension(root, dimension))
        except InputErrors as exc:
            errors.extend(exc.errors)
        except InputError as exc:
            errors.append(exc)
    if errors:
        raise InputErrors(errors)
    return GeniusDataset(root=root, cases=cases, missing_images=missing_images(cases))


def missing_images(cases: Iterable[GeniusCase]) -> list[tuple[str, Path]]:
    """(record key, path) for every referenced image file that does not exist, each pair once."""
    found: list[tuple[str, Path]] = []
    for case in cases:
        for path in dict.fromkeys(ref.path for ref in case.images.values()):
            if not path.is_file():
                found.append((case.key, path))
    return found


def _resolve(
    record: GeniusRecord, dimension: str, dimension_dir: Path, root: Path
) -> tuple[GeniusCase | None, list[tuple[str, str]]]:
    """Resolve every tag of the record; problems come back as (field, message) pairs."""
    problems: list[tuple[str, str]] = []
    images: dict[str, ImageRef] = {}
    hints = record.vc_hints
    fields = [("context", record.context)] + [
        (f"vc_hint.{i}" if isinstance(record.vc_hint, list) else "vc_hint", hint) for i, hint in enumerate(hints)
    ]
    for where, text in fields:
        for name in image_names(text):
            if name in images:
                continue
            try:
                images[name] = ImageRef(name, resolve_image(name, dimension_dir, root))
            except ValueError as exc:
                problems.append((where, str(exc)))
    if problems:
        return None, problems
    vc_hints = [VCHint(text=hint, reference=images[names[0]] if (names := image_names(hint)) else None) for hint in hints]
    return GeniusCase(dimension=dimension, record=record, images=images, vc_hints=vc_hints), []


def _record_label(index: int, raw: object) -> str:
    if isinstance(raw, dict) and isinstance(raw.get("id"), (str, int)) and not isinstance(raw.get("id"), bool):
        return f"#{index} (id {raw['id']})"
    return f"#{index}"
