"""WISE prompts: the record format, the two prompt sets and their category id ranges, and the loader.

WISE ships JSON lists of ``{prompt_id, Prompt, Explanation, Category, Subcategory}``. The official
scoring scripts decide a prompt's category by its id range, not by the ``Category`` text (which is
inconsistent: ``time`` vs ``Space`` vs ``Physical Knowledge``, and one biology prompt of the legacy
rewrite file says ``Ecology``), so `category_of` maps ids and the ``Category`` field is kept as given.

Two sets exist and their ranges differ, so every id lookup names the set:

* ``legacy`` (the paper): files ``cultural_common_sense.json``, ``spatio-temporal_reasoning.json``,
  ``natural_science.json``; the ``*_rewrite.json`` twins hold the explicit rewrite of each prompt under
  the same id (the paper's rewrite ablation).
* ``verified`` (the current default): ``merge.json`` holds all prompts; the three ``*_verified.json``
  files hold the same prompts split by domain and are read only when ``merge.json`` is absent.

The published repository keeps them in ``data_verified/`` and ``WISE_legacy/data/``; `set_folder`
finds either from the repository root. A file of one set is never read as the other: names give it
away, and so do ``Category`` labels, which follow the id ranges of the set they belong to.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, TypeAdapter

from umni.plugin import CaseSet, InputError, InputErrors, Note, read_json_records

from . import prompts as P

if TYPE_CHECKING:
    from .options import WiseOptions

Variant = Literal["legacy", "verified"]
VARIANTS: tuple[Variant, ...] = ("legacy", "verified")

#: Category names used in summaries, in the order of the paper's tables.
CATEGORIES = ("culture", "time", "space", "biology", "physics", "chemistry")

#: Inclusive prompt-id range of each category, per set (from the official scoring scripts).
CATEGORY_RANGES: dict[Variant, dict[str, tuple[int, int]]] = {
    "legacy": {
        "culture": (1, 400),
        "time": (401, 567),
        "space": (568, 700),
        "biology": (701, 800),
        "physics": (801, 900),
        "chemistry": (901, 1000),
    },
    "verified": {
        "culture": (1, 400),
        "time": (401, 520),
        "space": (521, 640),
        "biology": (641, 760),
        "physics": (761, 880),
        "chemistry": (881, 1000),
    },
}

LEGACY_FILES = ("cultural_common_sense.json", "spatio-temporal_reasoning.json", "natural_science.json")
REWRITE_SUFFIX = "_rewrite.json"
LEGACY_REWRITE_FILES = tuple(name.replace(".json", REWRITE_SUFFIX) for name in LEGACY_FILES)
VERIFIED_MERGED_FILE = "merge.json"
VERIFIED_SPLIT_FILES = tuple(name.replace(".json", "_verified.json") for name in LEGACY_FILES)


class WisePrompt(BaseModel):
    """One WISE prompt as the official files spell it. Generation sees `Prompt` only; the judge also
    gets `Explanation`, which says what a knowledgeable image must show."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prompt_id: StrictInt = Field(ge=1, le=1000)
    Prompt: str = Field(min_length=1)
    Explanation: str = Field(min_length=1)
    Category: str = Field(min_length=1)
    Subcategory: str = Field(min_length=1)

    @property
    def image_name(self) -> str:
        """Official file name of the generated image, so outputs can be judged by other tools too."""
        return f"{self.prompt_id}.png"


#: How the official files spell each category (the id decides; labels only help recognise a set).
OFFICIAL_CATEGORY = {
    "culture": "Cultural knowledge",
    "time": "time",
    "space": "Space",
    "biology": "Biology",
    "physics": "Physical Knowledge",
    "chemistry": "Chemistry",
}

#: Where each set lives in the published repository (PKU-YuanGroup/WISE) as cloned.
REPOSITORY_FOLDERS: dict[Variant, tuple[str, ...]] = {
    "verified": ("data_verified",),
    "legacy": ("WISE_legacy/data", "data"),  # the repository root, or its WISE_legacy folder
}


def category_of(prompt_id: int, variant: Variant) -> str:
    """The category a prompt id belongs to in `variant`; raises ValueError outside 1..1000."""
    for name, (low, high) in _ranges(variant).items():
        if low <= prompt_id <= high:
            return name
    raise ValueError(f"prompt_id {prompt_id} is outside every {variant} category range (1..1000)")


def expected_ids(variant: Variant, categories: Iterable[str] = CATEGORIES) -> list[int]:
    """Every prompt id the full `variant` set holds for `categories` (all 1000 by default)."""
    ranges = _ranges(variant)
    ids: list[int] = []
    for name in categories:
        if name not in ranges:
            raise ValueError(f"unknown WISE category {name!r}; known: {', '.join(CATEGORIES)}")
        low, high = ranges[name]
        ids.extend(range(low, high + 1))
    return sorted(ids)


def missing_ids(present: Iterable[int], expected: Iterable[int]) -> list[int]:
    """Expected ids with no prompt (or no result): the official scripts refuse to score when any exist;
    umni scores what is there and lists these instead."""
    have = set(present)
    return sorted(i for i in set(expected) if i not in have)


def load_prompts(path: str | Path) -> list[WisePrompt]:
    """Read one WISE JSON file, checking every record and reporting all problems in one InputErrors.

    An empty list is allowed: a set folder may hold a domain file with no prompts of a sample.
    """
    return read_json_records(path, WisePrompt, id_field="prompt_id", label=_record_label, allow_empty=True)


@dataclass
class WiseCaseSet:
    """The prompts of one set, sorted by id, with where they came from and which ids are absent."""

    variant: Variant
    directory: Path
    files: list[Path]
    prompts: list[WisePrompt]
    rewrite: bool = False
    missing: list[int] = field(default_factory=list)
    #: The file each prompt id was read from.
    sources: dict[int, Path] = field(default_factory=dict)

    def by_id(self) -> dict[int, WisePrompt]:
        return {p.prompt_id: p for p in self.prompts}

    def category_of(self, prompt_id: int) -> str:
        return category_of(prompt_id, self.variant)

    def ids_by_category(self) -> dict[str, list[int]]:
        grouped: dict[str, list[int]] = {name: [] for name in CATEGORIES}
        for p in self.prompts:
            grouped[self.category_of(p.prompt_id)].append(p.prompt_id)
        return grouped


def set_folder(path: str | Path, variant: Variant) -> Path:
    """The folder holding `variant`'s files under `path`: a ``legacy/`` or ``verified/`` subfolder,
    the published repository's ``data_verified/`` or ``WISE_legacy/data/``, else `path` itself."""
    path = Path(path)
    for name in (variant, *REPOSITORY_FOLDERS[variant]):
        if (path / name).is_dir() and set_files(path / name, variant):
            return path / name
    return path


def other_set(variant: Variant) -> Variant:
    return "verified" if variant == "legacy" else "legacy"


def _hint(found: Variant) -> str:
    if found == "legacy":
        return "add --option set=legacy (with scoring=legacy for the paper's WiScore)"
    return "leave out set=legacy (the verified set is the default)"


def refuse_other_set_file(path: Path, variant: Variant) -> None:
    """Refuse a file named as one of the other set's files: its prompt ids follow other ranges."""
    names = {
        "legacy": (*LEGACY_FILES, *LEGACY_REWRITE_FILES),
        "verified": (VERIFIED_MERGED_FILE, *VERIFIED_SPLIT_FILES),
    }
    other = other_set(variant)
    if path.name in names[other]:
        raise InputError(
            f"this is a file of the {other} WISE set, whose category id ranges differ from the {variant} "
            f"set's; {_hint(other)}",
            path=path,
        )


def refuse_other_set_labels(prompts: Sequence[WisePrompt], variant: Variant, path: Path) -> None:
    """Refuse prompts whose ``Category`` labels fit the other set's id ranges better than `variant`'s
    (a renamed file of the other set): scored with the wrong ranges, prompts land in wrong categories."""
    other = other_set(variant)

    def fits(v: Variant) -> int:
        return sum(p.Category == OFFICIAL_CATEGORY[category_of(p.prompt_id, v)] for p in prompts)

    here, there = fits(variant), fits(other)
    if there > here:
        raise InputError(
            f"the Category labels of {there} prompt(s) match the {other} set's id ranges but only {here} match the "
            f"{variant} set's: this looks like {other} WISE data; {_hint(other)}",
            path=path,
        )


def set_files(directory: str | Path, variant: Variant, *, rewrite: bool = False) -> list[Path]:
    """The files `load_set` reads for `variant` in `directory` (only those that exist)."""
    directory = Path(directory)
    if variant == "legacy":
        names: Sequence[str] = LEGACY_REWRITE_FILES if rewrite else LEGACY_FILES
    elif rewrite:
        raise InputError("the rewrite ablation exists only for the legacy set", path=directory)
    elif (directory / VERIFIED_MERGED_FILE).is_file():
        names = (VERIFIED_MERGED_FILE,)
    else:
        names = VERIFIED_SPLIT_FILES
    return [directory / name for name in names if (directory / name).is_file()]


def load_set(directory: str | Path, variant: Variant, *, rewrite: bool = False) -> WiseCaseSet:
    """Load a whole set directory (official file names), checking ids across files.

    A sample set may hold only some prompts: absent ids are listed in `missing`, not treated as
    errors. Ids outside the set's ranges cannot happen (every id 1..1000 has a category); duplicates
    across files are errors.
    """
    directory = Path(directory)
    _ranges(variant)
    if not directory.is_dir():
        raise InputError("WISE set directory not found", path=directory)
    files = set_files(directory, variant, rewrite=rewrite)
    if not files:
        if set_files(directory, other_set(variant)):
            raise InputError(
                f"these are files of the {other_set(variant)} WISE set, not the {variant} set; {_hint(other_set(variant))}",
                path=directory,
            )
        if variant == "legacy":
            wanted: Sequence[str] = LEGACY_REWRITE_FILES if rewrite else LEGACY_FILES
        else:
            wanted = (VERIFIED_MERGED_FILE, *VERIFIED_SPLIT_FILES)
        raise InputError(f"no {variant} WISE files here; expected one of: {', '.join(wanted)}", path=directory)

    errors: list[InputError] = []
    prompts: dict[int, WisePrompt] = {}
    source: dict[int, Path] = {}
    for path in files:
        try:
            loaded = load_prompts(path)
        except InputErrors as exc:
            errors.extend(exc.errors)
            continue
        except InputError as exc:
            errors.append(exc)
            continue
        for prompt in loaded:
            if prompt.prompt_id in prompts:
                errors.append(
                    InputError(
                        f"prompt_id {prompt.prompt_id} also appears in {source[prompt.prompt_id].name}",
                        path=path,
                        record=f"prompt_id {prompt.prompt_id}",
                        field="prompt_id",
                    )
                )
                continue
            prompts[prompt.prompt_id] = prompt
            source[prompt.prompt_id] = path
    if errors:
        raise InputErrors(errors)
    ordered = [prompts[i] for i in sorted(prompts)]
    return WiseCaseSet(
        variant=variant,
        directory=directory,
        files=files,
        prompts=ordered,
        rewrite=rewrite,
        missing=missing_ids(prompts, expected_ids(variant)),
        sources=source,
    )


def _ranges(variant: str) -> dict[str, tuple[int, int]]:
    try:
        return CATEGORY_RANGES[variant]  # type: ignore[index]
    except KeyError:
        raise ValueError(f"unknown WISE set {variant!r}; use one of: {', '.join(VARIANTS)}") from None


def _record_label(index: int, raw: object) -> str:
    """'#index (prompt_id N)' so a user can find the record by position or by id."""
    if isinstance(raw, dict) and isinstance(raw.get("prompt_id"), int):
        return f"#{index} (prompt_id {raw['prompt_id']})"
    return f"#{index}"


@dataclass(frozen=True)
class WiseCase:
    """One prompt of the chosen set, with the category its id falls in and the file it came from."""

    prompt: WisePrompt
    set: Variant
    category: str
    file: str
    rewrite: bool = False

    @property
    def id(self) -> str:
        return str(self.prompt.prompt_id)


def prompt_file_schema() -> dict[str, Any]:
    """A WISE file is a JSON list of prompt records."""
    return TypeAdapter(list[WisePrompt]).json_schema()


def load_cases(path: Path, options: WiseOptions) -> CaseSet[WiseCase]:
    """Read a single WISE JSON file, a set folder (official file names), a folder holding
    ``legacy/`` and ``verified/`` set folders, or the published repository as cloned
    (``data_verified/``, ``WISE_legacy/data/``). Files of the other set are refused, named or
    recognised by their labels: their id ranges differ, so they are never scored with these."""
    if options.judge_prompt is not None:
        if not options.judge_prompt.is_file():
            raise InputError("the judge template file (judge_prompt) does not exist", path=options.judge_prompt)
        P.judge_template(options.judge_prompt)  # a bad template fails here, before any work
    variant = options.prompt_set
    path = Path(path)
    if path.is_file():
        if options.rewrite and not path.name.endswith(REWRITE_SUFFIX):
            raise InputError(
                f"rewrite=true reads the explicit rewrite prompts (*{REWRITE_SUFFIX}); pass one of those files "
                "or the legacy set folder",
                path=path,
            )
        refuse_other_set_file(path, variant)
        prompts = sorted(load_prompts(path), key=lambda p: p.prompt_id)
        refuse_other_set_labels(prompts, variant, path)
        files = [path]
        sources: dict[int, Path] = {}
        missing = missing_ids((p.prompt_id for p in prompts), expected_ids(variant))
        where = path
    else:
        where = set_folder(path, variant)
        loaded = load_set(where, variant, rewrite=options.rewrite)
        prompts, files, missing, sources = loaded.prompts, loaded.files, loaded.missing, loaded.sources
    if not prompts:
        raise InputError(f"no WISE prompts in {'this file' if path.is_file() else 'these files'}", path=where)
    cases = [
        WiseCase(
            p, variant, category_of(p.prompt_id, variant), sources.get(p.prompt_id, files[0]).name, options.rewrite
        )
        for p in prompts
    ]
    notes = [
        Note(
            f"prompt_id {c.prompt.prompt_id}",
            "Category",
            f"labelled {c.prompt.Category!r}, but its id places it in {c.category} "
            f"({OFFICIAL_CATEGORY[c.category]!r}); the id decides, as in the official scoring",
        )
        for c in cases
        if c.prompt.Category != OFFICIAL_CATEGORY[c.category]
    ]
    if missing:
        notes.append(
            Note(
                "(whole set)",
                "prompt_id",
                f"{len(missing)} of the {len(expected_ids(variant))} {variant} prompt ids are not in these files; "
                "the summary lists them and scores only the prompts present",
            )
        )
    return CaseSet(path=where, cases=cases, notes=notes)
