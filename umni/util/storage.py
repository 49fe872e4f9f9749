"""Telling a disk fault from everything else, and creating files the way the user's umask asks.

A full disk, a read-only mount, a missing permission or a damaged SQLite file is nobody's model
failure: `storage_guard` turns those errors into `StorageError` (one line naming the file), which
the runner lets through and the CLI reports with exit 1. Other errors pass unchanged.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path
from types import TracebackType

from umni.util.errors import StorageError

#: errno values that mean the storage, not the data, is at fault.
STORAGE_ERRNOS = {
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EIO: "input/output error",
    errno.ENOTDIR: "a path component is a file, not a directory",
    errno.EISDIR: "is a directory, not a file",
    errno.EEXIST: "a file is in the way of a directory",
}

#: SQLite messages (lower case) that mean the database file or its disk is at fault.
SQLITE_FAULTS = (
    "database or disk is full",
    "disk i/o error",
    "database disk image is malformed",
    "file is not a database",
    "attempt to write a readonly database",
    "unable to open database file",
    "readonly database",
)


def storage_error(exc: BaseException, path: str | Path | None) -> StorageError | None:
    """The StorageError `exc` amounts to, or None when it is not a storage fault."""
    if isinstance(exc, StorageError):
        return exc
    if isinstance(exc, OSError) and exc.errno in STORAGE_ERRNOS:
        where = exc.filename if exc.filename is not None else path
        return StorageError(f"{STORAGE_ERRNOS[exc.errno]} ({os.strerror(exc.errno)})", path=where)
    if isinstance(exc, sqlite3.DatabaseError) and type(exc) in (sqlite3.DatabaseError, sqlite3.OperationalError):
        message = str(exc).lower()
        if any(fault in message for fault in SQLITE_FAULTS):
            hint = "; the database is damaged: move it aside (a cache can be rebuilt)" if "malformed" in message or "not a database" in message else ""
            return StorageError(f"SQLite: {exc}{hint}", path=path)
    return None


class storage_guard:  # noqa: N801 -- used as a function: `with storage_guard(path):`
    """Run the block; a disk fault inside becomes StorageError naming `path` (or the failing file).

    A plain class rather than a generator context manager: it wraps every cache read and write
    and every event line, where contextlib's generator machinery cost more than the work."""

    __slots__ = ("path",)

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = path

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if isinstance(exc, (OSError, sqlite3.DatabaseError)):
            typed = storage_error(exc, self.path)
            if typed is not None and typed is not exc:
                raise typed from exc


def current_umask() -> int:
    """The process umask, read from /proc without changing it (changing it races other threads);
    read each time, since a program embedding umni may change it."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except OSError:
        pass
    old = os.umask(0o022)
    os.umask(old)
    return old


def file_mode() -> int:
    """The mode a plain `open(path, "w")` would give a new file: 0666 less the umask."""
    return 0o666 & ~current_umask()


def touch_with_umask(path: Path) -> None:
    """Create `path` (if absent) with the umask's mode, so SQLite's files (which copy the main
    file's mode) can be shared by a group the way the user set up."""
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, file_mode()))
    except FileExistsError:
        pass
