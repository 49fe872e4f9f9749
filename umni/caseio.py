"""Reading case files record by record, with errors that name file, line or record, and field.

Every record is checked and every problem collected, so a user fixes a file in one pass; nothing
runs until the whole file is valid.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from .errors import InputError, InputErrors

M = TypeVar("M", bound=BaseModel)


def validation_errors(exc: ValidationError, *, path: Path, record: str | int | None, line: int | None = None) -> list[InputError]:
    return [
        InputError(error["msg"], path=path, record=record, line=line, field=".".join(str(p) for p in error["loc"]) or None)
        for error in exc.errors()
    ]


def read_jsonl(path: Path, model: type[M], *, id_field: str = "id") -> list[M]:
    """One model instance per non-empty line; duplicate ids are an error."""
    errors: list[InputError] = []
    records: list[M] = []
    seen: dict[str, int] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason})", path=path) from None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            raw: Any = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.append(InputError(f"invalid JSON: {exc.msg} (column {exc.colno})", path=path, line=number))
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
        records.append(item)
    if errors:
        raise InputErrors(errors)
    if not records:
        raise InputError("the case file holds no cases", path=path)
    return records
