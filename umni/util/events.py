"""The structured event log of a run: one JSON object per line in `events.jsonl`.

Each invocation appends, so a resumed run's log tells the whole story (starts, retries, failures,
cache hits, the end). A run writes one line per node, so a line is rendered directly (time, event,
fields, then credentials masked) rather than through a logging pipeline: at a few hundred
microseconds of engine cost per node, a general-purpose processor chain was a fifth of it. The
file is line-buffered, so a killed run keeps every line it finished.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

from umni.util import jsontext
from umni.util.secrets import scrub
from umni.util.storage import storage_guard


def render(event: str, fields: Mapping[str, object]) -> str:
    """One log line: ``time`` (UTC, ISO 8601 with a Z), ``event``, the fields (anything not JSON as its str)."""
    now = datetime.now(UTC).isoformat()  # ends in "+00:00"
    return scrub(jsontext.line({"time": now[:-6] + "Z", "event": event, **fields}))


class EventLog:
    """Appends events to `path`; with no path, events are dropped (runs without a directory)."""

    def __init__(self, path: Path | None) -> None:
        self._path = path
        with storage_guard(path):
            self._file: TextIO | None = open(path, "a", buffering=1, encoding="utf-8") if path else None

    def emit(self, event: str, **fields: object) -> None:
        """Append one event; a field's value may be anything (what is not JSON is written as its str)."""
        if self._file is not None:
            line = render(event, fields) + "\n"
            with storage_guard(self._path):  # a full disk stops the run as a StorageError
                self._file.write(line)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
