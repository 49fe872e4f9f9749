"""Reading JSON and JSON Lines files with errors a user can act on: a missing, unreadable, non-UTF-8
or malformed file is one InputError naming the file (and the line where parsing stopped). Case files
(`umni.protocols.caseio`) and a run folder's files (`umni.store.runfolder`) are read through these.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from umni.util.errors import InputError


def read_text(path: Path) -> str:
    """A file's text; a missing or unreadable file is the user's to fix, so say which."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("file not found", path=path) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot read the file: {exc}", path=path) from None


def read_json(path: Path) -> Any:
    """Parse a JSON file; a malformed one names the line where parsing stopped."""
    text = read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg}", path=path, line=exc.lineno) from None
    except RecursionError:
        # json gives up on nesting deeper than Python's recursion limit; still a file problem
        raise InputError("not valid JSON: nested too deeply to read", path=path) from None


def jsonl_lines(text: str) -> list[str]:
    """The lines of a JSON Lines text, split on ``\n`` only (a trailing ``\r`` dropped).

    `str.splitlines` also splits on U+2028, U+0085 and other separators that JSON allows raw inside a
    string (umni writes results with ensure_ascii=False), which would cut such a record in two.
    """
    return [line.removesuffix("\r") for line in text.split("\n")]


def each_jsonl_line(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) of each line of a JSON Lines file, read one line at a time (a file of
    20,000 records is never held whole), split as `jsonl_lines` splits; errors as `read_text` words them."""
    offset = 0
    try:
        with path.open("rb") as file:
            for number, raw in enumerate(file, start=1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise InputError(f"not UTF-8 text ({exc.reason} at byte {offset + exc.start})", path=path) from None
                offset += len(raw)
                yield number, line.removesuffix("\n").removesuffix("\r")
    except FileNotFoundError:
        raise InputError("file not found", path=path) from None
    except OSError as exc:  # a folder, no permission, a failing disk: the user's to fix, named
        raise InputError(f"cannot read the file: {exc}", path=path) from None
