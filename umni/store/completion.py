"""Whether a run directory's outputs describe one finished state.

An invocation rewrites results.jsonl, summary.json and report.html one after another; a kill between
two of them would leave a summary that describes another state than the results beside it. So an
invocation first creates the marker file ``INCOMPLETE`` and removes it — one atomic unlink — only
after every output is written. Readers (leaderboards, sweep reports, rejudge, agreement) call
`require_complete` and refuse a directory that still carries the marker. Directories written
before the marker existed carry none and read as before.
"""

from __future__ import annotations

from pathlib import Path

from umni.store.runfolder import INCOMPLETE
from umni.util.errors import InputError
from umni.util.storage import storage_guard

#: The marker's file name (`umni.store.runfolder`).
MARKER = INCOMPLETE

_TEXT = (
    "umni is writing this run directory, or was stopped while writing it: its results.jsonl,\n"
    "summary.json and report.html may describe different states. Run the same command again to\n"
    "finish it; umni removes this file once every output is written.\n"
)


def mark_incomplete(out: Path) -> None:
    """Mark `out` as being written (before any of its outputs changes)."""
    path = Path(out) / MARKER
    with storage_guard(path):
        if not path.exists():
            path.write_text(_TEXT, encoding="utf-8")


def mark_complete(out: Path) -> None:
    """Every output of `out` is written: remove the marker (atomic)."""
    with storage_guard(out):
        (Path(out) / MARKER).unlink(missing_ok=True)


def is_complete(run_dir: Path) -> bool:
    return not (Path(run_dir) / MARKER).exists()


def require_complete(run_dir: Path) -> None:
    """Refuse a run directory an interrupted or running invocation left half written."""
    if not is_complete(run_dir):
        raise InputError(
            "this run directory is incomplete (an umni run was interrupted while writing it, or is still "
            "running); run the same command again to finish it before reading it",
            path=run_dir,
        )
