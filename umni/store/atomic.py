"""Files written whole or not at all: a crash or a full disk never leaves a half-written run file,
leaderboard or image blob behind."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from umni.util.secrets import scrub
from umni.util.storage import file_mode, storage_guard


def atomic_write_bytes(path: Path, data: bytes | Iterable[bytes], *, durable: bool = True) -> None:
    """Write through a temporary file and rename, so a crash never leaves a half-written file.

    `durable` also fsyncs before the rename, against power loss. Image blobs skip it: they are
    verified by hash whenever they are used, so a blob torn by a power cut is a cache miss, and
    an fsync per image would dominate the cost of a fast backend.
    """
    with storage_guard(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
        try:
            os.fchmod(fd, file_mode())  # mkstemp makes 0600; a shared cache needs what the umask allows
            with os.fdopen(fd, "wb") as handle:
                if isinstance(data, bytes):
                    handle.write(data)
                else:  # written as it is made: a large file never has to be held whole
                    handle.writelines(data)
                if durable:
                    handle.flush()
                    os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def atomic_write_text(path: Path, text: str) -> None:
    """Write a run's or a leaderboard's text file atomically, credentials scrubbed (`umni.secrets`)."""
    atomic_write_bytes(path, scrub(text).encode())


def atomic_write_lines(path: Path, lines: Iterable[str]) -> None:
    """`atomic_write_text` of the lines joined, written as they come (each scrubbed: a credential
    never spans lines, which are JSON objects with their newlines escaped)."""
    atomic_write_bytes(path, (scrub(line).encode() for line in lines))
