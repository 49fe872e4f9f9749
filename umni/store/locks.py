"""Locks that keep two processes out of one folder: a run folder's ``.lock``, a sweep's assembly lock,
a sweep unit's claim.

With a SQLite store they are file locks (flock) on a file in the folder, which hold across machines
only where the shared filesystem honours flock (Lustre mounted without ``-o flock`` and some NFS
setups do not); `FileLocks.note` says so at start on such a filesystem, and a filesystem that refuses
flock outright is a StorageError naming the way out. With a PostgreSQL store they are advisory locks
in the database (`umni.store.pglocks`), whatever the filesystem. Every process writing one folder
must use the same kind of store (a sweep's tasks all read the store from the sweep file).
"""

from __future__ import annotations

import errno
import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Protocol

from umni.util.errors import InputError, StorageError
from umni.util.mounts import shared_filesystem
from umni.util.storage import storage_guard

__all__ = ["FileLocks", "FolderLocks", "Held", "exclusive"]

#: flock's answers on a filesystem that does not implement it (NFS without a lock manager: ENOLCK;
#: Lustre without -o flock: ENOSYS).
_NO_FLOCK = frozenset({errno.ENOLCK, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL})


class Held(Protocol):
    """A lock this process holds."""

    def release(self) -> None: ...

    def check(self) -> None:
        """Raise StorageError when the lock was lost (a database lock across a reconnect) and another
        process holds it now: the holder must stop writing."""


class FolderLocks(Protocol):
    """Where a store keeps its locks."""

    def try_hold(self, folder: Path, name: str) -> Held | None:
        """Lock `name` of `folder` (the folder is made if missing); None when another process holds it."""

    def note(self, folder: Path) -> str | None:
        """One line to say at start when these locks may not hold for `folder`, else None."""


class _FileHeld:
    def __init__(self, handle: IO[str]) -> None:
        self._handle = handle

    def release(self) -> None:
        self._handle.close()  # closing the file drops the lock

    def check(self) -> None:
        return None  # a file lock is held until released


class FileLocks:
    """flock on ``folder/name`` (the file stays; the lock goes with the process)."""

    def try_hold(self, folder: Path, name: str) -> Held | None:
        with storage_guard(folder):
            folder.mkdir(parents=True, exist_ok=True)
            handle = open(folder / name, "w")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            return None
        except OSError as exc:
            handle.close()
            if exc.errno in _NO_FLOCK:
                raise StorageError(
                    f"this filesystem refuses file locks (flock: {exc.strerror}), which keep two processes out of one "
                    "folder with a SQLite store; use a PostgreSQL store (--cache postgresql://…), whose locks live in "
                    "the database, or mount the filesystem with flock support",
                    path=folder,
                ) from None
            raise
        return _FileHeld(handle)

    def note(self, folder: Path) -> str | None:
        kind = shared_filesystem(folder)
        if kind is None:
            return None
        return (
            f"{folder} is on a shared filesystem ({kind}): with a SQLite store, run-folder locks and sweep unit claims "
            "are file locks (flock) and hold across machines only if it honours them; a PostgreSQL store keeps them "
            "in the database"
        )


@contextmanager
def exclusive(locks: FolderLocks, folder: Path, name: str, busy: str) -> Iterator[Held]:
    """Hold lock `name` of `folder` for the block; another holder is an InputError saying `busy`."""
    held = locks.try_hold(folder, name)
    if held is None:
        raise InputError(busy, path=folder)
    try:
        yield held
    finally:
        held.release()
