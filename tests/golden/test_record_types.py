"""Every protocol types its results.jsonl record (the `Protocol`'s RecordT) as a TypedDict, and the
records of the golden runs are exactly that shape: each field of the declared type, every required
key present, no key the type does not declare (nested records included). A TypedDict is not checked
at run time, so without this a record and its type could drift apart unseen."""

from __future__ import annotations

import json
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, NotRequired, Required, Union, get_args, get_origin, get_type_hints, is_typeddict

import pytest

from umni.protocols import get_protocol

EXPECTED = Path(__file__).parent / "expected"
PROTOCOLS = ("aegis", "genius", "girbench", "umnibench", "wise")
#: what the engine adds to each line beside the protocol's record
ENGINE_FIELDS = ("transcript",)


def record_type(name: str) -> Any:
    protocol = get_protocol(name)
    base = next(b for b in type(protocol).__orig_bases__ if get_origin(b) is not None)  # type: ignore[attr-defined]
    return get_args(base)[2]


def problems(value: Any, declared: Any, where: str) -> list[str]:
    """Where `value` (a record read back from JSON) departs from its declared type: a wrong type, a
    required key missing, a key the type does not declare; nested records included."""
    origin, args = get_origin(declared), get_args(declared)
    if declared is Any:
        return []
    if is_typeddict(declared):
        if not isinstance(value, dict):
            return [f"{where}: {type(value).__name__}, not a record"]
        hints = get_type_hints(declared, include_extras=True)
        found = [f"{where}.{key}: not declared" for key in value if key not in hints]
        for key, hint in hints.items():
            optional = get_origin(hint) is NotRequired or (get_origin(hint) is not Required and not declared.__total__)
            if get_origin(hint) in (Required, NotRequired):
                (hint,) = get_args(hint)
            if key in value:
                found += problems(value[key], hint, f"{where}.{key}")
            elif not optional:
                found.append(f"{where}.{key}: missing")
        return found
    if origin in (Union, types.UnionType):
        each = [problems(value, arg, where) for arg in args]
        return [] if any(not p for p in each) else min(each, key=len)
    if origin is Literal:
        return [] if value in args else [f"{where}: {value!r} is not one of {args}"]
    if origin in (list, Sequence):
        if not isinstance(value, list):
            return [f"{where}: {type(value).__name__}, not a list"]
        return [p for i, item in enumerate(value) for p in problems(item, args[0], f"{where}[{i}]")]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{where}: {type(value).__name__}, not an object"]
        return [p for key, item in value.items() for p in problems(item, args[1], f"{where}.{key}")]
    if declared is type(None):
        return [] if value is None else [f"{where}: {value!r} is not null"]
    if declared is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif declared is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, declared)
    return [] if ok else [f"{where}: {value!r} is not {getattr(declared, '__name__', declared)}"]


@pytest.mark.parametrize("name", PROTOCOLS)
def test_the_record_type_is_a_typed_dict(name: str) -> None:
    assert is_typeddict(record_type(name)), f"{name}: RecordT is {record_type(name)}, not a TypedDict"


@pytest.mark.parametrize("name", PROTOCOLS)
def test_golden_records_have_exactly_the_declared_shape(name: str) -> None:
    declared = record_type(name)
    lines = (EXPECTED / name / "results.jsonl").read_text(encoding="utf-8").splitlines()
    assert lines
    for line in lines:
        record = json.loads(line)
        for field in ENGINE_FIELDS:
            record.pop(field, None)
        assert problems(record, declared, record["case_id"]) == []
