"""umni.util.jsontext: orjson where its bytes are json's. Every cache key is a hash of canonical JSON,
so `canonical` must give exactly the standard library's text for every value, including those where
orjson's own text differs (small floats, NaN, huge integers, non-string keys, subclasses)."""

from __future__ import annotations

import enum
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from umni.store.hashing import _encode, canonical_json
from umni.util import jsontext


def reference(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_encode)


def outcome(encode: Callable[[object], str], value: object) -> tuple[str, object]:
    try:
        return "text", encode(value)
    except (TypeError, ValueError) as exc:
        return "raises", type(exc)


class Colour(str, enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


class Text(str):
    pass


@dataclass
class Point:
    x: int


TRICKY = [
    0.1, 1e-7, 1e16, 1e17, 1.5e-5, 2.5e-05, 0.0001, 0.00012, 5e-324, -0.0, 1.7976931348623157e308, 1e-100, 123456789.0,
    float("nan"), float("inf"), -float("inf"),
    2**63 - 1, 2**64, -(2**70), True, False, None,
    "plain", "é ü 字 😀", "\x00\x1f\x7f\u2028\u2029", 'quote " back \\ slash', "\b\f\n\r\t", "use lr 3e-5", "0.00001 in text",
    {"b": 1, "a": [1, 2.5, {"z": None, "é": "x"}], "A": {}}, {"😀": 1, "\uffff": 2, "z": 3},
    {1: "int key", 2: "two"}, {10: "a", 9: "b"}, {True: 1, None: 2, 1.5: 3},
    (1, 2, (3,)), [[[[]]]],
    Colour.RED, Level.HIGH, Text("sub"), {Text("k"): Text("v")}, np.float64(0.1), np.float64(1e-7), np.int64(7),
    {"set": {3, 1, 2}}, frozenset({"b", "a"}), Path("/tmp/x"),
    {"deep": [{"nested": [{"values": [0.1, 1e-7, "t", None, 2**65]}]}]},
]


@pytest.mark.parametrize("value", TRICKY)
def test_canonical_text_is_jsons_for_tricky_values(value: object) -> None:
    assert outcome(canonical_json, value) == outcome(reference, value)


@pytest.mark.parametrize("value", [Point(1), datetime(2026, 1, 1), object(), {"x": b"bytes"}])
def test_what_json_cannot_encode_still_raises(value: object) -> None:
    with pytest.raises(TypeError):
        reference(value)
    with pytest.raises(TypeError):
        canonical_json(value)


def test_a_circular_value_raises_as_json_does() -> None:
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(ValueError):
        canonical_json(loop)


floats = st.floats(allow_nan=True, allow_infinity=True)
values = st.recursive(
    st.none() | st.booleans() | st.integers() | floats | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(value=values)
def test_canonical_text_is_jsons_for_any_json_value(value: object) -> None:
    assert canonical_json(value) == reference(value)


@settings(max_examples=200, deadline=None)
@given(value=values)
def test_dumps_reads_back_as_json_dumps_does(value: object) -> None:
    def same(a: object, b: object) -> bool:  # NaN == NaN here
        if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
            return True
        if isinstance(a, list) and isinstance(b, list):
            return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
        if isinstance(a, dict) and isinstance(b, dict):
            return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
        return type(a) is type(b) and a == b

    assert same(json.loads(jsontext.dumps(value)), json.loads(json.dumps(value, ensure_ascii=False)))


def test_dumps_refuses_what_json_refuses() -> None:
    with pytest.raises(TypeError):
        jsontext.dumps({"p": Point(1)})


def test_a_log_line_is_valid_json_for_anything() -> None:
    value = {"n": 2**70, "f": float("nan"), 3: "int key", "p": Point(1), "when": datetime(2026, 1, 1), "s": {1}}
    decoded = json.loads(jsontext.line(value))
    assert decoded["n"] == 2**70 and decoded["3"] == "int key" and decoded["p"] == "Point(x=1)"
    assert decoded["when"] == "2026-01-01 00:00:00" and decoded["s"] == "{1}"
    assert json.loads(jsontext.line({"f": float("nan")})) == {"f": None}
