"""Turning GIR-Bench data files into validated records, with errors a user can act on.

Every loader validates record by record and collects all problems before raising, so one run shows
everything wrong with a file instead of one problem per attempt. Each problem names the file, the
record (its position in the list and, when it has one, its id) and the field.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from umni.errors import InputError, InputErrors

Model = TypeVar("Model", bound=BaseModel)

#: Image files a reference folder may hold (the official tooling globs the same suffixes).
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp")


def record_label(index: int, record_id: Any = None) -> str:
    """How a record is named in messages: its position, and its id when it has a usable one."""
    if record_id is None or isinstance(record_id, (dict, list)):
        return str(index)
    return f"{index} (id {record_id})"


def field_path(loc: Iterable[str | int]) -> str:
    """Pydantic's error location as the dotted path a user would look for: ``task.objects[2]``.

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


def errors_from_validation(
    exc: ValidationError, *, path: str | Path, record: str | int | None
) -> list[InputError]:
    """One InputError per field in error; a union's per-branch complaints about one field are
    joined into a single message ("should be a valid string or a valid list")."""
    by_field: dict[str, list[str]] = {}
    for err in exc.errors():
        message = err["msg"].removeprefix("Value error, ")
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


def read_json(path: Path) -> Any:
    """Parse a JSON file; a missing or malformed file is the user's to fix, so say where."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("file not found", path=path) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the file: {exc}", path=path) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg}", path=path, line=exc.lineno) from None


def load_json_records(path: str | Path, model: type[Model]) -> list[Model]:
    """Validate a JSON list of records against `model`; ids must be unique.

    All records are checked before anything is raised, so the error lists every bad record.
    """
    path = Path(path)
    data = read_json(path)
    if not isinstance(data, list):
        raise InputError(f"expected a JSON list of records, found {type(data).__name__}", path=path)
    records: list[Model] = []
    errors: list[InputError] = []
    first_index_of_id: dict[Any, int] = {}
    for index, raw in enumerate(data):
        raw_id = raw.get("id") if isinstance(raw, dict) else None
        label = record_label(index, raw_id)
        if not isinstance(raw, dict):
            errors.append(InputError(f"expected an object, found {type(raw).__name__}", path=path, record=label))
            continue
        try:
            parsed = model.model_validate(raw)
        except ValidationError as exc:
            errors.extend(errors_from_validation(exc, path=path, record=label))
            continue
        case_id = getattr(parsed, "id", None)
        if case_id in first_index_of_id:
            errors.append(
                InputError(
                    f"duplicate id {case_id!r} (first used by record {first_index_of_id[case_id]})",
                    path=path,
                    record=label,
                    field="id",
                )
            )
            continue
        first_index_of_id[case_id] = index
        records.append(parsed)
    if not data:
        errors.append(InputError("the file holds no records", path=path))
    raise_if_any(errors)
    return records


def confined_path(
    root: str | Path,
    candidate: str | Path,
    *,
    source: str | Path | None = None,
    record: str | int | None = None,
    field: str | None = None,
) -> Path:
    """`candidate` (relative to `root`, or absolute) if it stays inside `root`, else InputError.

    The check is lexical (``..`` segments are collapsed, symlinks are not followed): a dataset
    downloaded from a hub may hold symlinks into a cache, and those are the user's own files, whereas
    a ``../`` written into a record is how a case file reaches outside its data directory.
    """
    root_norm = os.path.normpath(os.path.abspath(root))
    text = str(candidate)
    if not text.strip():
        raise InputError("empty path", path=source, record=record, field=field)
    joined = text if os.path.isabs(text) else os.path.join(root_norm, text)
    norm = os.path.normpath(joined)
    if os.path.commonpath([root_norm, norm]) != root_norm:
        raise InputError(
            f"path {text!r} points outside the data directory {root_norm}",
            path=source,
            record=record,
            field=field,
        )
    return Path(norm)


def is_image_file(path: Path) -> bool:
    return path.is_file() and path.suffix.lower() in IMAGE_SUFFIXES
