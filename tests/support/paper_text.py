"""The papers' texts (``<protocol's paper>.txt`` in the folder ``UMNI_PAPERS`` names, by default
``seeds`` beside the benchmark files' folder: ``../shared/seeds`` beside ``UMNI_BENCH_DATA``), and
how a table row is read from them: the numbers a printed line holds after its label, in order,
"-" read as None and LaTeX cell colouring (``\\cellcolor red!15``) left out."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.support.shared_data import bench_data_root

SETTING = "UMNI_PAPERS"
#: each protocol's paper text, under the folder
TEXTS = {"umnibench": "umnibench.txt", "genius": "genius.txt", "aegis": "aegis.txt", "wise": "wise.txt", "girbench": "gir-bench.txt"}

_COLOUR = re.compile(r"\\cellcolor\s*[a-z]+!\d\d")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
#: how far below the previous row (in lines) the next one may be printed
SPAN = 40


def paper_lines(protocol: str) -> list[str]:
    """The paper's text as lines; skips the calling test when the texts are not here."""
    value = os.environ.get(SETTING)
    folder = Path(value).resolve() if value else bench_data_root().parent / "seeds"
    path = folder / TEXTS[protocol]
    if not path.exists():  # one reason for every such skip, so that pytest -ra shows them as one line
        absent = [name for name in TEXTS.values() if not (folder / name).exists()]
        pytest.skip(f"paper texts absent from {folder} ({SETTING}): {', '.join(absent)}")
    return path.read_text(encoding="utf-8").splitlines()


def printed_values(line: str, label: str) -> list[float | None] | None:
    """The values `line` prints after `label` (a cell of its own: followed by "|" or by a number),
    or None when the line does not print that label."""
    clean = _COLOUR.sub("", line)
    found = re.search(re.escape(label) + r"(?=\s*\||\s+-?\d)", clean)
    if found is None:
        return None
    rest = clean[found.end():]
    values: list[float | None] = []
    for token in rest.split("|") if "|" in rest else rest.split():
        token = token.strip()
        if token in ("-", "–"):
            values.append(None)
        elif _NUMBER.fullmatch(token):
            values.append(float(token))
    return values


def find_rows(lines: list[str], caption: str, labels: list[str]) -> list[tuple[int, list[float | None]]]:
    """Each label's line (index, values), looked for in order below the caption's first line, each
    within `SPAN` lines of the one before; AssertionError naming what is not found."""
    starts = [i for i, line in enumerate(lines) if caption in line]
    assert starts, f"caption {caption!r} not in the paper's text"
    at = starts[0]
    found = []
    for label in labels:
        for i in range(at + 1, min(at + 1 + SPAN, len(lines))):
            values = printed_values(lines[i], label)
            if values:
                found.append((i, values))
                at = i
                break
        else:
            raise AssertionError(f"row {label!r} not printed within {SPAN} lines below line {at + 1} ({caption!r})")
    return found
