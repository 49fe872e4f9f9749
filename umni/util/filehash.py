"""Content hashes of files on disk, streamed, and remembered so that re-runs stay fast.

Identity by bytes, not by name and size: model weights overwritten in place with a file of the same
size, or a case image replaced by another, must change what the cache sees. Hashing multi-gigabyte
checkpoints on every run would be slow, so each hash is remembered in a small SQLite table keyed by
the file's resolved path with its size, mtime_ns, inode and ctime_ns: a file rewritten in any way
changes at least one of those (a rename-into-place changes the inode; a write changes ctime_ns, which,
unlike mtime, no tool can set back), and is hashed again. The memo lives in the umni cache folder ($UMNI_CACHE or the user cache folder).
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path

from umni.util.storage import touch_with_umask

__all__ = ["file_sha256", "files_sha256", "stat_key"]

_CHUNK = 1 << 20
_lock = threading.Lock()
#: The memo's table; `hashes`, of earlier releases, was keyed without ctime_ns and is no longer read.
TABLE = "file_hashes"
_memo: dict[tuple[str, int, int, int, int], str] = {}


def _memo_db() -> Path:
    env = os.environ.get("UMNI_CACHE")
    if env:
        return Path(env) / "file-hashes.db"
    import platformdirs  # here: with UMNI_CACHE set it is never needed

    return Path(platformdirs.user_cache_dir("umni")) / "file-hashes.db"


def stat_key(path: Path) -> tuple[str, int, int, int, int]:
    """What says a file is unchanged since it was last read: resolved path, size, mtime_ns, inode
    and ctime_ns (a file rewritten in place with its size and mtime restored still changes ctime)."""
    resolved = path.resolve()
    st = resolved.stat()
    return (str(resolved), st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)


def _remembered(key: tuple[str, int, int, int, int]) -> str | None:
    if key in _memo:
        return _memo[key]
    try:
        with sqlite3.connect(_memo_db(), timeout=10.0) as db:
            row = db.execute(
                f"SELECT sha256 FROM {TABLE} WHERE path=? AND size=? AND mtime_ns=? AND inode=? AND ctime_ns=?", key
            ).fetchone()
    except sqlite3.Error:  # no memo yet, or an unusable one: hash again (the memo only saves time)
        return None
    return row[0] if row else None


def _remember(key: tuple[str, int, int, int, int], digest: str) -> None:
    _memo[key] = digest
    try:
        _memo_db().parent.mkdir(parents=True, exist_ok=True)
        touch_with_umask(_memo_db())  # SQLite would make it 0644 whatever the umask
        with sqlite3.connect(_memo_db(), timeout=10.0) as db:
            db.execute(
                f"CREATE TABLE IF NOT EXISTS {TABLE} "
                "(path TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER, inode INTEGER, ctime_ns INTEGER, sha256 TEXT)"
            )
            db.execute(f"INSERT OR REPLACE INTO {TABLE} VALUES (?,?,?,?,?,?)", (*key, digest))
    except (sqlite3.Error, OSError):
        pass  # a read-only cache folder: correct, only slower next time


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The SHA-256 of a file's bytes, read in chunks; remembered by `stat_key`."""
    path = Path(path)
    key = stat_key(path)
    with _lock:
        found = _remembered(key)
    if found is not None:
        return found
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    value = digest.hexdigest()
    if stat_key(path) == key:  # not changed while it was read
        with _lock:
            _remember(key, value)
    return value


def files_sha256(paths: Iterable[str | os.PathLike[str]], root: str | os.PathLike[str] | None = None) -> list[list[str]]:
    """[[name, sha256], …] of several files, names relative to `root` when given, sorted by name."""
    rows = []
    for p in paths:
        name = str(Path(p).relative_to(root)) if root is not None else str(Path(p).resolve())
        rows.append([name, file_sha256(p)])
    return sorted(rows)
