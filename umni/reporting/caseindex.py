"""The viewer's case index: one short entry and one line of search text per case, written once
beside the run when it finishes.

`umni view` on a 20,000-case run must open at once and stay in bounded memory, so it never parses
``results.jsonl`` as a whole: it reads this index (case id, category, status, the protocol's own
per-case score, failure kinds, and where the case's line sits in ``results.jsonl``) and seeks to one
record when a case is opened. Search covers every string of a case — prompts, replies, judge
reasoning, failure messages and raw replies — from ``cases.search.txt``, one lower-cased line per
case in index order. A run written before the index existed (or whose ``results.jsonl`` has changed
since) gets the same index built in memory, the slow way, by the same function.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from umni.reporting.leaderboard import write_run_tables
from umni.store.atomic import atomic_write_lines, atomic_write_text
from umni.store.runfolder import CASE_INDEX, CASE_SEARCH, RunFolder, Summary

INDEX_FILE, SEARCH_FILE = CASE_INDEX, CASE_SEARCH  # the run folder's names (`umni.store.runfolder`)
INDEX_VERSION = 1
#: The columns of one index entry, in order (an entry is a JSON list, to keep 20k of them small).
FIELDS = ["case_id", "category", "status", "score", "out_of", "failures", "offset", "length"]

_SHA = re.compile(r"^[0-9a-f]{64}$")
_SPACE = re.compile(r"\s+")


def case_category(record: dict[str, Any]) -> str:
    """The case's domain or category, whichever field its protocol uses."""
    for key in ("domain", "category", "dimension", "task"):
        value = record.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def case_status(record: dict[str, Any], verdicts: list[bool | None]) -> str:
    """``failed`` when a node failed or was blocked, else ``wrong`` when a panel's verdict is
    negative, else ``ok``."""
    for node in record.get("nodes", {}).values():
        if node.get("status") in ("failed", "blocked"):
            return "failed"
    return "wrong" if any(v is False for v in verdicts) else "ok"


def failure_kinds(record: dict[str, Any]) -> list[str]:
    """The distinct failure kinds of the case's nodes (``blocked`` for a node a failure blocked)."""
    kinds: set[str] = set()
    for node in record.get("nodes", {}).values():
        if "failure" in node:
            kinds.add(str(node["failure"].get("kind", "unknown")))
        elif node.get("status") == "blocked":
            kinds.add("blocked")
    return sorted(kinds)


def search_text(record: dict[str, Any]) -> str:
    """Every string of the record (image hashes aside), lower-cased, on one line."""
    parts: list[str] = []
    stack: list[Any] = [record]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            if not _SHA.match(value):
                parts.append(value)
        elif isinstance(value, dict):
            stack.extend(reversed(list(value.values())))
        elif isinstance(value, list):
            stack.extend(reversed(value))
    return _SPACE.sub(" ", " ".join(parts)).strip().lower()


def _lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """(byte offset, line) of each non-blank line of a JSON-lines file."""
    offset = 0
    with path.open("rb") as handle:
        for line in handle:
            if line.strip():
                yield offset, line
            offset += len(line)


@dataclass
class CaseIndex:
    """Index entries (lists in `FIELDS` order) of one run's results.jsonl of `size` bytes."""

    entries: list[list[Any]]
    size: int

    def to_json(self) -> dict[str, Any]:
        return {"version": INDEX_VERSION, "fields": FIELDS, "results_size": self.size, "cases": self.entries}


def entry(protocol: Any, record: dict[str, Any], offset: int, length: int) -> list[Any]:
    """One index entry: the protocol's views give the status, `case_score` the score."""
    try:
        verdicts = [view.verdict for view in protocol.views(record)] if protocol is not None else []
    except Exception:  # a record of an older shape: still listed, without verdicts
        verdicts = []
    score: tuple[float, float] | None = None
    if protocol is not None:
        try:
            score = protocol.case_score(record)
        except Exception:
            score = None
    points, out_of = score if score is not None else (None, None)
    return [str(record.get("case_id")), case_category(record), case_status(record, verdicts), points, out_of,
            failure_kinds(record), offset, length]


def build_index(protocol: Any, results: Path) -> tuple[CaseIndex, list[str]]:
    """The index and the search lines of a results.jsonl, parsing every record once."""
    entries: list[list[Any]] = []
    texts: list[str] = []
    for offset, line in _lines(results):
        record = json.loads(line)
        entries.append(entry(protocol, record, offset, len(line)))
        texts.append(search_text(record))
    return CaseIndex(entries, results.stat().st_size), texts


def write_case_index(run_dir: Path, protocol: Any) -> Path:
    """Write cases.index.json and cases.search.txt beside the run's results.jsonl (just written),
    the search lines as each record is read (all of them at once outgrew a 20,000-case run)."""
    results = RunFolder(run_dir).results_jsonl
    entries: list[list[Any]] = []

    def search_lines() -> Iterator[str]:
        for offset, line in _lines(results):
            record = json.loads(line)
            entries.append(entry(protocol, record, offset, len(line)))
            yield search_text(record) + "\n"

    atomic_write_lines(run_dir / SEARCH_FILE, search_lines())
    index = CaseIndex(entries, results.stat().st_size)
    path = run_dir / INDEX_FILE
    atomic_write_text(path, json.dumps(index.to_json(), ensure_ascii=False, separators=(",", ":")))
    return path


def read_case_index(run_dir: Path) -> CaseIndex | None:
    """The stored index, or None when there is none, it is of another version, or results.jsonl
    has changed since it was written (then the caller builds it afresh)."""
    path, results = run_dir / INDEX_FILE, RunFolder(run_dir).results_jsonl
    if not path.exists() or not (run_dir / SEARCH_FILE).exists() or not results.exists():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    if not isinstance(data, dict) or data.get("version") != INDEX_VERSION or data.get("fields") != FIELDS:
        return None
    if data.get("results_size") != results.stat().st_size:
        return None
    return CaseIndex(data["cases"], data["results_size"])


def read_search_lines(run_dir: Path) -> list[str]:
    return (run_dir / SEARCH_FILE).read_text().splitlines()


def read_record(results: Path, offset: int, length: int) -> dict[str, Any]:
    """One record of a results.jsonl, read at its offset."""
    with results.open("rb") as handle:
        handle.seek(offset)
        record: dict[str, Any] = json.loads(handle.read(length))
    return record


def write_viewer_files(run_dir: Path, protocol: Any, summary: Summary) -> None:
    """What `umni view` and later leaderboards read instead of recomputing, written once when the
    run finishes: tables.json (the tables with bootstrap intervals) and the case index.

    Both are caches of what results.jsonl and summary.json (already written) hold: a record shape
    they cannot read is said on stderr and the file left out — the viewer and leaderboards then
    compute it themselves — rather than leaving a finished run marked incomplete. A storage error
    (full disk) still raises, as for every other file of the run."""
    for write in (lambda: write_run_tables(run_dir, summary), lambda: write_case_index(run_dir, protocol)):
        try:
            write()
        except OSError:
            raise
        except Exception as error:  # noqa: BLE001 - see the docstring: a cache, never a lost run
            print(f"umni: {run_dir}: viewer files left out ({type(error).__name__}: {error}); "
                  "umni view and umni leaderboard will compute them", file=sys.stderr)
