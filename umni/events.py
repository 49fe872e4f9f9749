"""The structured event log of a run: one JSON object per line in `events.jsonl`.

Each invocation appends, so a resumed run's log tells the whole story (starts, retries, failures,
cache hits, the end). Uses structlog with a logger bound to this run's file, not global config,
so several runs in one process (a sweep) keep separate logs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TextIO

import structlog

from .secrets import scrub
from .storage import storage_guard


def _scrub_line(_logger: Any, _method: str, line: Any) -> Any:
    """The last processor: the rendered JSON line, with any credential masked."""
    return scrub(line)


class EventLog:
    def __init__(self, path: Path | None) -> None:
        self._path = path
        with storage_guard(path):
            self._file: TextIO | None = open(path, "a", buffering=1, encoding="utf-8") if path else None
        self._log = structlog.wrap_logger(
            structlog.WriteLogger(self._file) if self._file else structlog.ReturnLogger(),
            processors=[
                structlog.processors.TimeStamper(fmt="iso", utc=True, key="time"),
                structlog.processors.EventRenamer("event"),
                structlog.processors.JSONRenderer(ensure_ascii=False),
                _scrub_line,  # credentials never reach the log
            ],
        )

    def emit(self, event: str, **fields: Any) -> None:
        if self._file is not None:
            with storage_guard(self._path):  # a full disk stops the run as a StorageError
                self._log.info(event, **fields)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
