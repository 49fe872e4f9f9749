"""Where GIR-Bench data files may point: inside the dataset's folder, and only at image files.

Reading and validating the JSON records themselves is `umni.caseio`'s job; what is GIR-specific is
that records and folder layouts name files, and a name must not lead outside the data directory.
"""

from __future__ import annotations

import os
from pathlib import Path

from umni.errors import InputError

#: Image files a reference folder may hold (the official tooling globs the same suffixes).
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp")


def confined_path(
    root: str | Path,
    candidate: str | Path,
    *,
    source: str | Path | None = None,
    record: str | int | None = None,
    field: str | None = None,
) -> Path:
    """`candidate` (relative to `root`, or absolute) if it stays inside `root`, else InputError.

    The check is lexical (``..`` segments are collapsed, symlinks are not followed): a dataset
    downloaded from a hub may hold symlinks into a cache, and those are the user's own files, whereas
    a ``../`` written into a record is how a case file reaches outside its data directory.
    """
    root_norm = os.path.normpath(os.path.abspath(root))
    text = str(candidate)
    if not text.strip():
        raise InputError("empty path", path=source, record=record, field=field)
    joined = text if os.path.isabs(text) else os.path.join(root_norm, text)
    norm = os.path.normpath(joined)
    if os.path.commonpath([root_norm, norm]) != root_norm:
        raise InputError(
            f"path {text!r} points outside the data directory {root_norm}",
            path=source,
            record=record,
            field=field,
        )
    return Path(norm)


def is_image_file(path: Path) -> bool:
    return path.is_file() and path.suffix.lower() in IMAGE_SUFFIXES
