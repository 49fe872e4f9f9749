"""AEGIS case schema and loader.

The official `annotation.json` is a JSON list of records (schema in protocols.md §3). The published
file has a few slips that the official scripts never trip over because they never look closely; we
validate every record, repair the slips we understand and report each repair as a `Quirk`, so that
`umni cases check aegis PATH` can show what was changed and nothing is changed silently.

Repairs (each produces one `Quirk`):

* checklist stored as the text ``parsed error: [ "...", ... ]`` (ids 576 and 728): the items are read
  back as JSON string literals; stray characters between them (a lone ``e``, a lone ``活``) are dropped
  and named in the quirk. Nothing is ever evaluated as code.
* item tag ``[Imgae]`` -> ``[Image]``.
* ``reasoning_type`` ``casual reasoning`` -> ``causal reasoning`` (the paper's own table has the same
  typo) and the single ``comparison reasoning`` -> ``comparative reasoning``: the paper names six types
  and "comparison" can only mean the comparative one, so mapping keeps per-type tables at six rows.
* ``ref_text`` given as a list (always ``[]`` in the real file) -> the items joined by newlines.

Reported, kept as is (they change no input):

* negatively phrased checklist items ("Does the response incorrectly claim ...?"), where a Y means
  the model made the mistake. The official score is the plain fraction of Y, so a Y still counts as
  a pass there; we keep that by default (numbers stay comparable with the paper) and report the items;
  `scoring.item_score(..., inverted=...)` computes the corrected variant for analysis.
* ``input_type`` that disagrees with the number of input images; a clear prompt that mentions a
  reference image the model is never shown (``<ref_image1>``); unknown extra fields (ignored).

Images: paths in the file are relative to ``<annotation dir>/images`` (the official layout:
``data/annotation.json`` + ``data/images/<category>/...``); a path that already starts with
``images/`` is taken relative to the annotation file's directory. A path with ``..`` in it, or one
that resolves outside the annotation file's directory, is an input error. Missing files are listed with
`AegisCaseSet.missing_images`, not raised at load, because the real images are distributed separately.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from umni.plugin import CaseSet, Note, Skipped, confined_path, read_json, shown_missing, validate_records

from ..keyed import keyed_as

TASKS = ("understanding", "generation", "editing", "interleaved")
Task = Literal["understanding", "generation", "editing", "interleaved"]
InputType = Literal["single_image", "text", "interleaved"]

#: Domain groups of the paper (and of the official score scripts), category names as in the file.
DOMAIN_GROUPS: dict[str, tuple[str, ...]] = {
    "STEM": ("biology", "chemistry", "mathematics", "medicine", "physics", "astronomy_geography", "it"),
    "Humanities": ("agriculture", "history", "movie", "music", "art", "culture", "architecture"),
    "Daily life": ("activity", "anime", "game", "traffic", "photography", "food", "engineering"),
}
CATEGORY_GROUP: dict[str, str] = {cat: group for group, cats in DOMAIN_GROUPS.items() for cat in cats}
Category = Literal[
    "biology", "chemistry", "mathematics", "medicine", "physics", "astronomy_geography", "it",
    "agriculture", "history", "movie", "music", "art", "culture", "architecture",
    "activity", "anime", "game", "traffic", "photography", "food", "engineering",
]  # fmt: skip

REASONING_TYPES = (
    "spatial reasoning",
    "temporal reasoning",
    "causal reasoning",
    "comparative reasoning",
    "analogical reasoning",
    "logical reasoning",
    "no reasoning",
)
ReasoningType = Literal[
    "spatial reasoning", "temporal reasoning", "causal reasoning", "comparative reasoning",
    "analogical reasoning", "logical reasoning", "no reasoning",
]  # fmt: skip
#: Misspelt reasoning types in the real file and what they mean.
REASONING_ALIASES = {"casual reasoning": "causal reasoning", "comparison reasoning": "comparative reasoning"}

ItemTag = Literal["Text", "Image", "Consistency"]
ITEM_TAGS = ("Text", "Image", "Consistency")
#: Misspelt item tags in the real file.
TAG_ALIASES = {"Imgae": "Image"}

_TAG = re.compile(r"^\s*\[([A-Za-z]+)\]\s*")
_PLACEHOLDER = re.compile(r"<image(\d+)>")
_PARSED_ERROR = re.compile(r"^\s*parsed error:\s*", re.IGNORECASE)
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)

# A checklist item reads negatively when a Y means the output is wrong: it asks whether the output
# did something "incorrectly"/"erroneously"/"wrongly" (unless the sentence guards it with avoid/
# without/not before that word), says a detail "would be incorrect", asks whether the response
# "fails to" do something or "creates a contradiction", or asks "are there any" flaws (artifacts,
# distortions, remnants, extraneous marks, other edits) in the output.
_BAD_ADVERB = re.compile(r"\b(incorrectly|erroneously|wrongly|falsely|mistakenly)\b", re.IGNORECASE)
_GUARD = re.compile(r"\b(avoid\w*|without|not|never|free of)\b", re.IGNORECASE)
_NEGATIVE_PHRASES = (
    re.compile(r"\bwhich would be (incorrect|wrong|a mistake)\b", re.IGNORECASE),
    re.compile(r"^(Does|Do|Did) the \w+( \w+)? fail to\b", re.IGNORECASE),
    re.compile(r"\bcreates? a contradiction\b", re.IGNORECASE),
    re.compile(
        r"^(Are|Is) there any\b[^?]*\b(other|incorrect|wrong|erroneous|extraneous|artifacts?|distortions?|remnants?|smudges?)\b",
        re.IGNORECASE,
    ),
)


def looks_negative(question: str) -> bool:
    """Whether a Y on this checklist question means the output made a mistake (a heuristic)."""
    match = _BAD_ADVERB.search(question)
    if match and not _GUARD.search(question[: match.start()]):
        return True
    return any(p.search(question) for p in _NEGATIVE_PHRASES)


class ChecklistItem(BaseModel):
    """One atomic yes/no question. `tag` says what the judge must look at."""

    model_config = ConfigDict(frozen=True)

    tag: ItemTag
    question: str = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _from_tagged_text(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        match = _TAG.match(value)
        if not match:
            raise ValueError(f"a checklist item must start with [Text], [Image] or [Consistency]; got {value[:60]!r}")
        if match.group(1) not in ITEM_TAGS:
            raise ValueError(f"unknown checklist tag [{match.group(1)}]; expected one of {', '.join(ITEM_TAGS)}")
        return {"tag": match.group(1), "question": value[match.end() :].strip()}

    @property
    def negative(self) -> bool:
        """A Y on this item means the output is wrong (see `looks_negative`)."""
        return looks_negative(self.question)

    def render(self) -> str:
        return f"[{self.tag}] {self.question}"


class AegisCase(BaseModel):
    """One AEGIS record, after repairs. Field names follow the official file."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    id: int = Field(ge=0)
    task: Task
    input_type: InputType
    prompt: str = Field(min_length=1)
    clear_prompt: str = Field(min_length=1)
    input_image: tuple[str, ...] = ()
    keywords: str = ""
    refined_keywords: str = ""
    reasoning_type: ReasoningType
    category: Category
    ref_text: str = ""
    ref_image: tuple[str, ...] = ()
    refined_question: tuple[ChecklistItem, ...]

    @field_validator("refined_question")
    @classmethod
    def _not_empty(cls, items: tuple[ChecklistItem, ...]) -> tuple[ChecklistItem, ...]:
        if not items:
            raise ValueError("the checklist needs at least one item")
        return items

    @field_validator("input_image", "ref_image")
    @classmethod
    def _plain_relative_paths(cls, paths: tuple[str, ...]) -> tuple[str, ...]:
        for path in paths:
            if not path.strip():
                raise ValueError("image paths must not be empty")
        return paths

    @model_validator(mode="after")
    def _placeholders_name_input_images(self) -> AegisCase:
        for field in ("prompt", "clear_prompt"):
            numbers = [int(n) for n in _PLACEHOLDER.findall(getattr(self, field))]
            too_high = [n for n in numbers if n < 1 or n > len(self.input_image)]
            if too_high:
                raise ValueError(
                    f"{field} refers to <image{too_high[0]}> but the record has {len(self.input_image)} input image(s)"
                )
        return self

    @property
    def checklist(self) -> tuple[ChecklistItem, ...]:
        return self.refined_question

    @property
    def domain_group(self) -> str:
        return CATEGORY_GROUP[self.category]


@dataclass(frozen=True)
class Quirk:
    """One thing the loader repaired or wants a human to know about, for `umni cases check`."""

    id: int | None
    field: str
    what: str
    action: str

    @property
    def record(self) -> str:
        """The record as `umni.protocol.Note` names it (the case id, or '?' if it had none)."""
        return "?" if self.id is None else str(self.id)

    @property
    def message(self) -> str:
        return f"{self.what} -> {self.action}"

    def describe(self) -> str:
        return f"id {self.record}, {self.field}: {self.message}"


@dataclass(frozen=True)
class AegisCaseSet:
    """Loaded cases plus the quirks found on the way and where their images live."""

    path: Path
    cases: tuple[AegisCase, ...]
    quirks: tuple[Quirk, ...]

    @property
    def root(self) -> Path:
        """The annotation file's directory: every image must resolve inside it."""
        return self.path.parent

    def resolve_image(self, relative: str) -> Path:
        return resolve_image_path(self.root, relative)

    def missing_images(self) -> list[tuple[int, str]]:
        """(case id, path as written) for every input or reference image that is not on disk."""
        missing = []
        for case in self.cases:
            for rel in (*case.input_image, *case.ref_image):
                if not self.resolve_image(rel).is_file():
                    missing.append((case.id, rel))
        return missing

    def by_id(self, case_id: int) -> AegisCase:
        for case in self.cases:
            if case.id == case_id:
                return case
        raise KeyError(case_id)

    def __len__(self) -> int:
        return len(self.cases)


def resolve_image_path(root: Path, relative: str) -> Path:
    """Where an image path of the annotation file points; raises ValueError if outside `root`.

    A path with a ``..`` part is refused outright (no real record needs one), and the resolved path
    (absolute paths and symlinks included) must lie inside `root`: a case file cannot make umni
    read, or send to a remote judge, a file outside its own folder.
    """
    root = Path(root).resolve()
    raw = Path(relative)
    if ".." in raw.parts:
        raise ValueError(f"image path {relative!r} climbs out with '..'; paths must stay inside the annotation folder {root}")
    if raw.is_absolute():
        candidate = raw
    elif raw.parts and raw.parts[0] == "images":
        candidate = root / raw
    else:
        candidate = root / "images" / raw
    return confined_path(root, candidate, inside="the annotation folder")


def load_cases(path: str | Path) -> AegisCaseSet:
    """Read and validate an AEGIS annotation file, repairing known quirks.

    Raises `InputErrors` listing every invalid record (file, record index and id, field), so a user
    fixes them all in one pass; returns the cases and the quirks otherwise.
    """
    path = Path(path)
    return parse_records(read_json(path), path=path)


def parse_records(records: list[Any], *, path: str | Path) -> AegisCaseSet:
    """Validate already-decoded records (what `load_cases` does after reading the file)."""
    path = Path(path)
    repairs: list[list[Quirk]] = []

    def repair(raw: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        fixed, quirks, problems = repair_record(raw)
        repairs.append(quirks)
        return fixed, problems

    cases = validate_records(
        records, AegisCase, path=path, prepare=repair, check=lambda record: _check_paths(record, path.parent)
    )
    # Only a file without a single problem gets here, so every record was repaired once, in order.
    assert len(repairs) == len(cases)
    quirks = [quirk for case, repaired in zip(cases, repairs) for quirk in (*repaired, *_notes(case))]
    return AegisCaseSet(path=path, cases=tuple(cases), quirks=tuple(quirks))


def repair_record(raw: dict[str, Any]) -> tuple[dict[str, Any], list[Quirk], list[tuple[str, str]]]:
    """Apply the known repairs to one raw record: (fixed copy, quirks, (field, message) errors)."""
    fixed = dict(raw)
    rid = raw.get("id") if isinstance(raw.get("id"), int) else None
    quirks: list[Quirk] = []
    errors: list[tuple[str, str]] = []

    known = set(AegisCase.model_fields)
    for extra in sorted(set(raw) - known):
        quirks.append(Quirk(rid, extra, "unknown field", "ignored"))

    reasoning = raw.get("reasoning_type")
    if isinstance(reasoning, str) and reasoning in REASONING_ALIASES:
        fixed["reasoning_type"] = REASONING_ALIASES[reasoning]
        quirks.append(Quirk(rid, "reasoning_type", f"misspelt type {reasoning!r}", f"read as {REASONING_ALIASES[reasoning]!r}"))

    ref_text = raw.get("ref_text")
    if isinstance(ref_text, list):
        if all(isinstance(t, str) for t in ref_text):
            fixed["ref_text"] = "\n".join(ref_text)
            quirks.append(Quirk(rid, "ref_text", f"a list of {len(ref_text)} string(s), not a string", "joined with newlines" if ref_text else "read as no reference text"))
        else:
            errors.append(("ref_text", "must be a string or a list of strings"))
            fixed["ref_text"] = ""  # reported once, here, not again by the model
    elif ref_text is None and "ref_text" in raw:
        fixed["ref_text"] = ""

    checklist = raw.get("refined_question")
    if isinstance(checklist, list):
        items, item_quirks, item_errors = _repair_checklist(checklist, rid)
        fixed["refined_question"] = items
        quirks += item_quirks
        errors += item_errors
    return fixed, quirks, errors


def salvage_checklist_text(text: str) -> tuple[list[str], str]:
    """Read checklist items out of text that should have been a JSON list of strings.

    Returns (items, stray) where `stray` is whatever non-JSON characters sat between the items. The
    whole list is tried as JSON first; if stray characters break it, each JSON string literal is
    decoded on its own (with `json.loads`, never `eval`).
    """
    body = _PARSED_ERROR.sub("", text, count=1).strip()
    try:
        value = json.loads(body)
    except json.JSONDecodeError:
        value = None
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value, ""
    items = [json.loads(m.group(0)) for m in _JSON_STRING.finditer(body)]
    leftover = _JSON_STRING.sub(" ", body)
    stray = re.sub(r"[\s,\[\]]+", " ", leftover).strip()
    return items, stray


def _repair_checklist(checklist: list[Any], rid: int | None) -> tuple[list[Any], list[Quirk], list[tuple[str, str]]]:
    quirks: list[Quirk] = []
    errors: list[tuple[str, str]] = []
    if checklist and isinstance(checklist[0], str) and _PARSED_ERROR.match(checklist[0]):
        salvaged, stray = salvage_checklist_text(checklist[0])
        if not salvaged:
            errors.append(("refined_question", "checklist is an unparsed 'parsed error:' text with no readable items"))
            return checklist, quirks, errors
        what = "checklist stored as unparsed text 'parsed error: [...]'"
        if stray:
            what += f" with stray characters {stray!r} between items"
        quirks.append(Quirk(rid, "refined_question", what, f"recovered {len(salvaged)} items from its JSON string literals"))
        checklist = salvaged + list(checklist[1:])
    repaired: list[Any] = []
    for i, item in enumerate(checklist):
        if not isinstance(item, str):
            repaired.append(item)
            continue
        match = _TAG.match(item)
        if match and match.group(1) in TAG_ALIASES:
            right = TAG_ALIASES[match.group(1)]
            item = f"[{right}] " + item[match.end() :]
            quirks.append(Quirk(rid, f"refined_question[{i}]", f"misspelt tag [{match.group(1)}]", f"read as [{right}]"))
        if looks_negative(_TAG.sub("", item, count=1)):
            quirks.append(
                Quirk(rid, f"refined_question[{i}]", f"negatively phrased item (a Y means a mistake): {item[:90]!r}", "kept; the official score still counts its Y as a pass")
            )
        repaired.append(item)
    return repaired, quirks, errors


def _notes(case: AegisCase) -> list[Quirk]:
    notes: list[Quirk] = []
    has_images = bool(case.input_image)
    if (case.input_type == "text") == has_images:
        notes.append(Quirk(case.id, "input_type", f"{case.input_type!r} but {len(case.input_image)} input image(s)", "kept; the input images decide what the model is shown"))
    refs = sorted(set(re.findall(r"<ref_image\d+>", case.clear_prompt)))
    if refs:
        notes.append(Quirk(case.id, "clear_prompt", f"mentions {', '.join(refs)}, a reference image the model is not shown", "kept as plain text"))
    return notes


def _check_paths(record: dict[str, Any], root: Path) -> list[tuple[str, str]]:
    problems = []
    for field in ("input_image", "ref_image"):
        paths = record.get(field)
        for i, rel in enumerate(paths if isinstance(paths, list) else []):
            if not isinstance(rel, str) or not rel.strip():
                continue  # the model reports those
            try:
                resolve_image_path(root, rel)
            except ValueError as exc:
                problems.append((f"{field}[{i}]", str(exc)))
    return problems


class LocatedCase(AegisCase):
    """An AEGIS case that knows the folder its image paths are relative to."""

    folder: Path = Field(exclude=True)

    def image_path(self, relative: str) -> Path:
        return resolve_image_path(self.folder, relative)


# Closures of the interleaved graph's compute nodes hold a case, so this class's module and name
# enter their cache keys: kept as first keyed (`umni_graphs.keyed`).
keyed_as(LocatedCase, "umni_graphs.aegis.protocol")


def located(case: AegisCase) -> LocatedCase:
    if not isinstance(case, LocatedCase):
        raise TypeError(f"AEGIS case {case.id}: build graphs from cases returned by PROTOCOL.load, which know their image folder")
    return case


def load_case_set(path: Path) -> CaseSet[AegisCase]:
    """The cases of an annotation file (or of the folder holding ``annotation.json``) that can run; a
    case whose images are missing, or an editing case without an input image, is skipped with why."""
    file = path / "annotation.json" if path.is_dir() else path
    loaded = load_cases(file)
    notes = [Note(q.record, q.field, q.message) for q in loaded.quirks]
    cases: list[AegisCase] = []
    skipped: list[Skipped] = []
    for case in loaded.cases:
        missing_inputs = [p for p in case.input_image if not loaded.resolve_image(p).is_file()]
        missing_refs = [p for p in case.ref_image if not loaded.resolve_image(p).is_file()]
        reasons = []
        if missing_inputs:
            shown = (shown_missing(p, loaded.resolve_image(p)) for p in missing_inputs)
            reasons.append(f"missing input image(s): {', '.join(shown)}")
        if missing_refs:
            shown = (shown_missing(p, loaded.resolve_image(p)) for p in missing_refs)
            reasons.append(f"missing reference image(s): {', '.join(shown)}")
        if case.task == "editing" and not case.input_image:
            reasons.append("an editing case needs an input image and names none")
        if reasons:
            skipped.append(Skipped(str(case.id), "; ".join(reasons)))
            continue
        cases.append(LocatedCase.model_construct(**dict(case), folder=loaded.root))
    return CaseSet(path=file, cases=cases, skipped=skipped, notes=notes)
