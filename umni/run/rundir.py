"""A run directory as one object: it owns the lock, run.json (the manifest), run.db (finished case
records), events.jsonl, the INCOMPLETE marker and the output files (results.jsonl, summary.json,
report.html). Opening it checks that the folder holds this run or nothing; closing it always closes
what it opened, whether the run finished, failed or was cancelled, so nothing computed is lost.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Container, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from umni.protocols.protocol import Protocol
from umni.reporting.caseindex import write_viewer_files
from umni.reporting.report import write_report
from umni.store.blobs import Blobs
from umni.store.cache import RunStore
from umni.store.completion import mark_complete, mark_incomplete
from umni.store.hashing import fingerprint
from umni.store.locks import FileLocks, FolderLocks, Held, exclusive
from umni.store.runfolder import LOCK, OWN_FILES, CaseRecord, Manifest, RunFolder, Summary
from umni.util.errors import InputError
from umni.util.events import EventLog
from umni.util.storage import storage_guard

#: What identifies the run a directory holds; a resume must match all of it (limit is checked apart).
IDENTITY_FIELDS = ("protocol", "cases", "identities", "options", "seed")
BUSY = "another umni process is using this run directory; wait for it or pick another --out"


def run_identity(manifest: Manifest) -> str:
    """The hash of what a run directory holds; kept in run.db as well as in run.json. A shard's
    directory is also tied to its shard (left out when unsharded, so older directories still match)."""
    written = manifest.to_json()
    fields = {k: written.get(k) for k in IDENTITY_FIELDS}
    if manifest.shard is not None:
        fields["shard"] = manifest.shard
    return fingerprint(fields)


class RunDir:
    """An open run directory (see `RunDir.open`)."""

    def __init__(self, path: Path, store: RunStore, events: EventLog, extended: str | None, lock: Held | None = None) -> None:
        self.path = path
        self.files = RunFolder(path)
        #: the folder's lock (a database lock can be lost across a reconnect: `finish` checks it)
        self.lock = lock
        #: finished case records, and the run's cumulative calls and usage
        self.store = store
        self.events = events
        #: a note when this invocation widened the run's --limit
        self.extended = extended

    @classmethod
    @contextmanager
    def open(cls, path: Path, manifest: Manifest, locks: FolderLocks | None = None) -> Iterator[RunDir]:
        """Lock `path` (with `locks`, the store's: file locks by default), make sure it holds this run
        (or nothing yet), and mark it incomplete until `finish` has written every output file. A folder
        this command refuses is left exactly as it was found: no lock file, no marker, not even the
        folder itself when it did not exist."""
        files = RunFolder(path)
        existed, had_lock = path.exists(), (path / LOCK).exists()
        with ExitStack() as held:
            lock = held.enter_context(exclusive(locks or FileLocks(), path, LOCK, BUSY))
            try:
                extended = _check_manifest(path, manifest)
                _check_existing_run_db(path, manifest)
            except InputError:
                _leave_as_found(path, existed, had_lock)
                raise
            mark_incomplete(path)
            store = RunStore(files.run_db)
            held.callback(store.close)
            _check_run_db(path, store, manifest)
            events = EventLog(files.events_jsonl)
            held.callback(events.close)
            yield cls(path, store, events, extended, lock)

    def finish(
        self, protocol: Protocol[Any, Any, Any, Any], summary: Summary, records: Iterable[CaseRecord], blobs: Blobs,
        *, cases: Container[str],
    ) -> None:
        """Write results.jsonl (the full records of `cases`, streamed from run.db), summary.json and
        the report (from `records`), then clear the INCOMPLETE marker."""
        if self.lock is not None:
            self.lock.check()  # another process holds the folder now: write nothing into it
        with storage_guard(self.path):  # the report's image copies too: a full disk is one StorageError
            self.files.write_results(self.store.records_of(cases))
            self.files.write_summary(summary)
            write_report(self.path, protocol, summary, records, blobs)
            write_viewer_files(self.path, protocol, summary)  # tables.json and the viewer's case index
        mark_complete(self.path)


def _leave_as_found(path: Path, existed: bool, had_lock: bool) -> None:
    """Undo what opening a refused folder made: the lock file, and the folder when it was new."""
    if not had_lock:
        (path / LOCK).unlink(missing_ok=True)
    if not existed:
        with contextlib.suppress(OSError):  # only ever an empty folder
            path.rmdir()


def _check_existing_run_db(path: Path, manifest: Manifest) -> None:
    """Refuse a run.db made by another command before anything is written beside it."""
    run_db = RunFolder(path).run_db
    if run_db.exists():
        store = RunStore(run_db)
        try:
            made_by = store.made_by()
        finally:
            store.close()
        if made_by is not None and made_by != run_identity(manifest):
            _refuse_other_run_db(path)


def _refuse_other_run_db(path: Path) -> None:
    raise InputError(
        "run.db was made by a different command (another protocol, case set, binding, option or seed) "
        "than this one; resume it with the same command, or choose another --out",
        path=RunFolder(path).run_db,
    )


def _limit_text(limit: int | None) -> str:
    return "all cases" if limit is None else f"the first {limit} case(s)"


def _check_manifest(out: Path, manifest: Manifest) -> str | None:
    """Refuse a directory that holds another run, or that is not a run directory at all; refuse a
    --limit that would shrink what the directory holds. Returns a note when the run is extended."""
    files = RunFolder(out)
    path = files.run_json
    if not path.exists():
        if files.run_db.exists():  # run.json deleted: run.db itself says which command made it
            store = RunStore(files.run_db)
            try:
                _check_run_db(out, store, manifest)
                held = len(store.records())
            finally:
                store.close()
            limit = manifest.limit
            if limit is not None and held > limit:
                raise InputError(
                    f"run.db holds {held} cases; --limit {limit} would shrink it. Resume it with --limit {held} or more "
                    "(or no --limit), or choose another --out",
                    path=out,
                )
        else:
            strays = sorted(p.name for p in out.iterdir() if p.name not in OWN_FILES)
            if strays:
                raise InputError(
                    f"this folder is not empty and is not a umni run directory (no run.json; it holds {', '.join(strays[:3])}"
                    + (", …" if len(strays) > 3 else "")
                    + "); choose a new or empty --out",
                    path=out,
                )
        files.write_manifest(manifest)
        return None
    try:  # compared as JSON: a run.json an older umni wrote is refused with what differs, not a field error
        old = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise InputError("run.json is not valid UTF-8 JSON; this does not look like a umni run directory", path=path) from None
    if not isinstance(old, dict):
        raise InputError("run.json does not hold a JSON object; this does not look like a umni run directory", path=path)
    new = manifest.to_json()
    differing = [k for k in (*IDENTITY_FIELDS, "shard") if old.get(k) != new.get(k)]
    if differing:
        raise InputError(
            "this run directory was made by a different command (it differs in: "
            + ", ".join(differing)
            + "); resume it with the same command, or choose another --out",
            path=out,
        )
    before, now = old.get("limit"), manifest.limit
    if before == now:
        return None
    if now is not None and (before is None or now < before):
        resume = "with no --limit" if before is None else f"with --limit {before} or more (or no --limit)"
        raise InputError(
            f"this run directory holds {_limit_text(before)}; --limit {now} would shrink it. Resume or extend it "
            f"{resume}, or choose another --out",
            path=out,
        )
    # a wider --limit: the directory is extended, keeping every finished case
    files.write_manifest(manifest)
    return f"extended this run from {_limit_text(before)} to {_limit_text(now)}"


def _check_run_db(out: Path, store: RunStore, manifest: Manifest) -> None:
    """Tie run.db to the command that made it, whatever happened to run.json."""
    identity = run_identity(manifest)
    made_by = store.made_by()
    if made_by is None:
        if store.has_rows():
            raise InputError(
                "run.db holds results but does not record which command made them (written by an older umni); "
                "choose another --out (the cache still saves the work)",
                path=RunFolder(out).run_db,
            )
        store.set_made_by(identity)
    elif made_by != identity:
        _refuse_other_run_db(out)
