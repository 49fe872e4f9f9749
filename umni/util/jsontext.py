"""JSON text, fast: orjson where its output is what the standard library's would be, `json` where it might not be.

A run encodes JSON several times per node (the cache key, the output's fingerprint, the stored row,
an event line), and building `json`'s encoder for each of those small values was a tenth of the
engine's CPU per node. orjson encodes them in a fraction of the time, but its text is not always
`json`'s, and cache keys are hashes of text, so every key must stay byte-identical:

* `canonical` (keys, fingerprints, results.jsonl) uses orjson only where its bytes are provably
  `json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False)`'s. The two agree on every
  string (escapes and raw UTF-8 alike), on key order (code point order) and on every float except
  those below 1e-4 in magnitude (orjson writes ``1e-5`` as ``0.00001`` and ``1e-7`` as ``1e-7``,
  Python ``1e-05`` and ``1e-07``) and NaN or infinity (orjson writes ``null``). So orjson's text is
  used unless it holds ``null``, ``0.0000`` or a digit followed by ``e-`` (the few values that
  could differ, plus some that merely look like them), and anything orjson does not encode the
  same way natively — integers beyond 64 bits, keys that are not strings, subclasses of the
  builtin types, dataclasses, dates, other objects — goes to `json`, with the caller's `default`.
  The only values orjson encodes where `json` would raise (a plain `Enum`, a `UUID`) are ones no
  stored key can contain.
* `dumps` (stored outputs) gives text that reads back to the same value as `json.dumps`' would
  (orjson's, unless it holds ``null``: a NaN must stay a NaN).
* `line` (events.jsonl) gives a valid JSON line for anything (``str()`` of what is not JSON;
  NaN as ``null``), in no particular layout.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import orjson

__all__ = ["canonical", "dumps", "line"]

_EXACT = orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
_SORTED = _EXACT | orjson.OPT_SORT_KEYS
#: A digit then "e-": a float below 1e-4 written in exponent form (or text that looks like one).
_SMALL_EXPONENT = re.compile(rb"\de-")


class _NotNative(Exception):
    """Raised by orjson's `default`: the value holds something orjson would not encode as `json` does."""


def _not_native(value: Any) -> Any:
    raise _NotNative


def _differs(text: bytes) -> bool:
    """Whether orjson's `text` may differ from `json`'s for the same value (see the module docstring)."""
    return b"null" in text or b"0.0000" in text or (b"e-" in text and _SMALL_EXPONENT.search(text) is not None)


_CANONICAL: dict[Callable[[Any], Any] | None, json.JSONEncoder] = {}


def canonical(value: Any, default: Callable[[Any], Any] | None = None) -> str:
    """``json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=default)``, fast."""
    try:
        text = orjson.dumps(value, default=_not_native, option=_SORTED)
    except orjson.JSONEncodeError:
        pass
    else:
        if not _differs(text):
            return text.decode()
    encoder = _CANONICAL.get(default)
    if encoder is None:  # one per `default` (a handful per process), built once
        encoder = _CANONICAL[default] = json.JSONEncoder(
            sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=default
        )
    return encoder.encode(value)


_PLAIN = json.JSONEncoder(ensure_ascii=False)


def dumps(value: Any) -> str:
    """JSON text of `value` that `json.loads` reads back as it would read ``json.dumps(value, ensure_ascii=False)``
    (not the same layout); raises TypeError for what `json` cannot encode."""
    try:
        text = orjson.dumps(value, default=_not_native, option=_EXACT)
    except orjson.JSONEncodeError:
        return _PLAIN.encode(value)
    return _PLAIN.encode(value) if b"null" in text else text.decode()


_LINE = json.JSONEncoder(ensure_ascii=False, default=str)
_LINE_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME


def line(value: Any) -> str:
    """One JSON line of `value` (no newline): anything that is not JSON as its ``str()``."""
    try:
        return orjson.dumps(value, default=str, option=_LINE_OPTIONS).decode()
    except orjson.JSONEncodeError:  # an integer beyond 64 bits, a nesting too deep
        return _LINE.encode(value)
