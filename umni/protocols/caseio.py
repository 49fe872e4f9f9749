"""Reading case files record by record, with errors that name file, line or record, and field.

Every record is checked and every problem collected, so a user fixes a file in one pass; nothing
runs until the whole file is valid. Two layouts exist: JSON Lines (`read_jsonl`, one record a line,
problems named by line) and a JSON list of records (`read_json_records`, problems named by the
record's position and id), which is how most published benchmarks ship their cases.
"""

from __future__ import annotations

import json
import os
import stat
import zlib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypedDict, TypeVar, Unpack, overload

from pydantic import BaseModel, ValidationError

from umni.util.errors import InputError, InputErrors
from umni.util.jsonfiles import each_jsonl_line, read_json

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")

#: A problem a loader hook found in one record: (field or None for the whole record, message).
Problem = tuple[str | None, str]
#: Repairs a raw record before validation: (record to validate, problems it could not repair).
Prepare = Callable[[dict[str, Any]], tuple[dict[str, Any], Iterable[Problem]]]
#: Checks a (repaired) raw record beyond what the model validates, e.g. where its paths point.
Check = Callable[[dict[str, Any]], Iterable[Problem]]
#: Names a record in messages from its position and raw value.
Label = Callable[[int, Any], str]


# ------------------------------------------------------------------------------------ messages


def validation_errors(exc: ValidationError, *, path: Path, record: str | int | None, line: int | None = None) -> list[InputError]:
    """One InputError per pydantic error, the field spelt as a dotted path (``questions.0.options``)."""
    return [
        InputError(error["msg"], path=path, record=record, line=line, field=".".join(str(p) for p in error["loc"]) or None)
        for error in exc.errors()
    ]


def field_path(loc: Iterable[str | int]) -> str:
    """Pydantic's error location as the path a user would look for: ``task.objects[2]``.

    Pydantic also puts the name of each union branch it tried into the location
    (``list[constrained-str]``); those are not fields a user can find in the file, so they are left out.
    """
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif "[" in part or "-" in part:
            continue
        else:
            out += ("." if out else "") + str(part)
    return out


def field_errors(exc: ValidationError, *, path: str | Path, record: str | int | None) -> list[InputError]:
    """One InputError per field in error (``task.objects[2]``); a union's per-branch complaints about
    one field are joined into one message ("should be a valid string; or a valid list")."""
    by_field: dict[str, list[str]] = {}
    for err in exc.errors():
        message = "required field is missing" if err["type"] == "missing" else err["msg"].removeprefix("Value error, ")
        messages = by_field.setdefault(field_path(err["loc"]), [])
        if message not in messages:
            messages.append(message)
    return [
        InputError("; or ".join(messages), path=path, record=record, field=field or None)
        for field, messages in by_field.items()
    ]


def raise_if_any(errors: list[InputError]) -> None:
    """Raise the one problem as itself, several as InputErrors, none as nothing."""
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise InputErrors(errors)


def record_label(index: int, raw: Any, *, id_field: str = "id") -> str:
    """How a record of a JSON list is named: its position, and its id when it has one ("3 (id 7)")."""
    value = raw.get(id_field) if isinstance(raw, dict) else None
    if value is None or isinstance(value, (dict, list)):
        return str(index)
    return f"{index} ({id_field} {value})"


# ------------------------------------------------------------------------------------- records


class RecordOptions(TypedDict, total=False):
    """How `validate_records` names, repairs and checks records (see there)."""

    id_field: str
    label: Label | None
    prepare: Prepare | None
    check: Check | None
    allow_empty: bool


def read_json_records(path: str | Path, model: type[M], **options: Unpack[RecordOptions]) -> list[M]:
    """Validate a JSON file holding a list of records against `model`; see `validate_records`."""
    path = Path(path)
    return validate_records(read_json(path), model, path=path, **options)


def validate_records(
    data: Any,
    model: type[M],
    *,
    path: str | Path,
    id_field: str = "id",
    label: Label | None = None,
    prepare: Prepare | None = None,
    check: Check | None = None,
    allow_empty: bool = False,
) -> list[M]:
    """One `model` per record of the decoded list `data`; values of `id_field` must be unique.

    `label(index, raw)` names a record in messages (default: `record_label`). `prepare` repairs a raw
    record before validation and says what it could not repair; `check` looks at the repaired record
    for problems the model cannot see (where a path points). Both run whether or not the model then
    accepts the record, so one pass shows every kind of problem; any problem rejects the record.
    Raises InputErrors naming file, record and field of every problem.
    """
    path = Path(path)
    if not isinstance(data, list):
        raise InputError(f"expected a JSON list of records, found {type(data).__name__}", path=path)
    if not data and not allow_empty:
        raise InputError("the file holds no records", path=path)
    records: list[M] = []
    errors: list[InputError] = []
    first_label: dict[Any, str] = {}
    for index, raw in enumerate(data):
        where = label(index, raw) if label else record_label(index, raw, id_field=id_field)
        if not isinstance(raw, dict):
            errors.append(InputError(f"expected an object, found {type(raw).__name__}", path=path, record=where))
            continue
        problems: list[Problem] = []
        if prepare is not None:
            raw, repaired = prepare(raw)
            problems += repaired
        if check is not None:
            problems += check(raw)
        errors += [InputError(message, path=path, record=where, field=field) for field, message in problems]
        try:
            item = model.model_validate(raw)
        except ValidationError as exc:
            errors += field_errors(exc, path=path, record=where)
            continue
        if problems:
            continue
        key = getattr(item, id_field)
        if key in first_label:
            message = f"duplicate {id_field} {key!r}, first used by record {first_label[key]}"
            errors.append(InputError(message, path=path, record=where, field=id_field))
            continue
        first_label[key] = where
        records.append(item)
    if errors:
        raise InputErrors(errors)
    return records


def read_jsonl(path: Path, model: type[M], *, id_field: str = "id") -> CompactCases[M]:
    """One model instance per non-empty line; duplicate ids are an error. Every line is validated
    here; the cases are then kept compact (`CompactCases`)."""
    errors: list[InputError] = []
    kept: list[bytes] = []
    seen: dict[str, int] = {}
    for number, line in each_jsonl_line(path):
        if not line.strip():
            continue
        try:
            raw: Any = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.append(InputError(f"invalid JSON: {exc.msg} (column {exc.colno})", path=path, line=number))
            continue
        except RecursionError:
            errors.append(InputError("invalid JSON: nested too deeply to read", path=path, line=number))
            continue
        record_id = raw.get(id_field) if isinstance(raw, dict) else None
        label = record_id if isinstance(record_id, (str, int)) else None
        if not isinstance(raw, dict):
            errors.append(InputError("each line must be a JSON object", path=path, line=number))
            continue
        try:
            item = model.model_validate(raw)
        except ValidationError as exc:
            errors.extend(validation_errors(exc, path=path, record=label, line=number))
            continue
        key = str(getattr(item, id_field))
        if key in seen:
            errors.append(InputError(f"duplicate id (first on line {seen[key]})", path=path, line=number, record=key, field=id_field))
            continue
        seen[key] = number
        kept.append(zlib.compress(line.encode("utf-8"), 1))
    if errors:
        raise InputErrors(errors)
    if not kept:
        raise InputError("the case file holds no cases", path=path)
    return CompactCases(model, kept)


class CompactCases(Sequence[M]):
    """Validated cases kept as their compressed source lines, made into models again when read.

    A case's model takes about ten times the bytes of its line (13 KB against 1 KB compressed for
    an UmniBench case), and a run needs each case only while it builds the case's graph and its
    record: a 20,000-case set held as models alone outgrew a run's whole memory budget. Reading
    validates the same line again, so it gives the model `read_jsonl` checked; each read is a
    fresh model (about 40 us), and a slice is another `CompactCases` over the same lines."""

    __slots__ = ("_model", "_lines")

    def __init__(self, model: type[M], lines: Sequence[bytes]) -> None:
        self._model = model
        self._lines = lines

    def __len__(self) -> int:
        return len(self._lines)

    @overload
    def __getitem__(self, index: int) -> M: ...

    @overload
    def __getitem__(self, index: slice) -> CompactCases[M]: ...

    def __getitem__(self, index: int | slice) -> M | CompactCases[M]:
        if isinstance(index, slice):
            return CompactCases(self._model, self._lines[index])
        return self._model.model_validate(json.loads(zlib.decompress(self._lines[index])))

    def picked(self, indices: Iterable[int]) -> CompactCases[M]:
        return CompactCases(self._model, [self._lines[i] for i in indices])


def pick(cases: Sequence[T], indices: Iterable[int]) -> Sequence[T]:
    """The cases at `indices`, still compact where they were (a shard's share of a large set)."""
    if isinstance(cases, CompactCases):
        return cases.picked(indices)
    return [cases[i] for i in indices]


# -------------------------------------------------------------------------------- case images


def file_problem(path: str | Path) -> str | None:
    """Why a file a case names cannot be read as one, in words a user acts on: None for a regular
    file (or a symlink to one); "missing"; or what the path is instead ("a FIFO (named pipe)", "a
    folder", ...). A FIFO is never opened: reading one blocks until something writes to it."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        return f"unreadable ({exc.strerror})"
    if stat.S_ISREG(mode):
        return None
    for test, what in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):  # fmt: skip
        if test(mode):
            return f"{what}, not a file"
    return "not a regular file"


def shown_missing(shown: str, path: str | Path) -> str:
    """A missing-image entry as listed in a skip reason: the name as the case wrote it, with what the
    path is when it exists but is no file (a FIFO reported as plainly "missing" misleads)."""
    problem = file_problem(path)
    return shown if problem in (None, "missing") else f"{shown} ({problem})"


def case_image_files(graphs: Iterable[Any]) -> dict[Path, list[str]]:
    """Every image file the graphs' nodes read (`ImageFile` parts), with the cases that read it.

    Taken from the built graphs, not from the case records, so it holds for every protocol, however
    its records name their images.
    """
    from umni.graph.graph import ImageFile

    found: dict[Path, list[str]] = {}
    for graph in graphs:
        for node in graph.nodes.values():
            for part in (*node.prompt, *node.images):
                if isinstance(part, ImageFile):
                    cases = found.setdefault(Path(part.path), [])
                    if graph.case_id not in cases:
                        cases.append(graph.case_id)
    return found


def case_image_problems(graphs: Iterable[Any]) -> list[InputError]:
    """One InputError per referenced image that cannot be decoded safely (missing, not an image,
    damaged, or over the pixel limit), naming the file and the cases that use it. `umni cases check`
    reports these; a run records the same problems as `input` failures of the nodes that read them."""
    from umni.store.images import check_image_file

    problems: list[InputError] = []
    for path, cases in case_image_files(graphs).items():
        try:
            check_image_file(path)
        except InputError as exc:
            shown = ", ".join(cases[:5]) + (f" and {len(cases) - 5} more" if len(cases) > 5 else "")
            problems.append(InputError(f"{exc.message} (read by case {shown})", path=exc.path))
    return problems


# ---------------------------------------------------------------------------------- confinement


def _hub_blobs(root: Path) -> Path | None:
    """The blob folder of a Hugging Face hub snapshot `root` lies in (``…/datasets--o--n/snapshots/<rev>/…``),
    where the hub keeps the files its snapshot symlinks point to; None elsewhere."""
    parts = root.parts
    for i in range(len(parts) - 2, 0, -1):
        if parts[i] == "snapshots" and parts[i - 1].split("--")[0] in ("datasets", "models", "spaces"):
            return Path(*parts[:i]) / "blobs"
    return None


def confined_path(root: str | Path, candidate: str | Path, *, inside: str = "the case folder") -> Path:
    """`candidate` (relative to `root`, or absolute) resolved, symlinks followed; ValueError when it
    lands outside `root`.

    The one confinement rule of every loader that opens files a case names (GENIUS, AEGIS,
    GIR-Bench): a case file must not make umni read — or send to a remote judge — a file outside its
    own folder, whether by ``..``, an absolute path, or a symlink placed in the folder. The one
    allowance: in a Hugging Face hub snapshot, files are symlinks into the repository's own ``blobs``
    folder, which counts as inside.
    """
    text = str(candidate)
    if not text.strip():
        raise ValueError("empty path")
    base = Path(root).resolve()
    joined = Path(candidate) if Path(candidate).is_absolute() else Path(root) / candidate
    resolved = joined.resolve()
    if resolved.is_relative_to(base):
        return resolved
    # where the name points before symlinks are followed: inside means a symlink leads out
    lexically_inside = Path(os.path.normpath(joined.absolute())).is_relative_to(os.path.normpath(Path(root).absolute()))
    blobs = _hub_blobs(base)
    if lexically_inside and blobs is not None and resolved.is_relative_to(blobs):
        return resolved
    via = " through a symlink" if lexically_inside else ""
    raise ValueError(f"path {text!r} points outside {inside} {base}{via}")
