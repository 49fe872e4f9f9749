"""Where GIR-Bench data files may point: inside the dataset's folder, and only at image files.

Reading and validating the JSON records themselves is `umni.caseio`'s job; what is GIR-specific is
that records and folder layouts name files, and a name must not lead outside the data directory.
"""

from __future__ import annotations

import os
from pathlib import Path

from umni.plugin import InputError
from umni.plugin import confined_path as core_confined_path

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

    ``..`` segments are collapsed first, then `umni.caseio.confined_path` follows symlinks: a symlink
    placed in the folder may not lead outside it either (GENIUS and AEGIS apply the same rule), except
    into a Hugging Face hub snapshot's own blob store. The lexical path is returned, so records keep
    the names the dataset uses.
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
    try:
        core_confined_path(root_norm, norm, inside="the data directory")
    except ValueError as exc:
        raise InputError(str(exc), path=source, record=record, field=field) from None
    return Path(norm)


def is_image_file(path: Path) -> bool:
    return path.is_file() and path.suffix.lower() in IMAGE_SUFFIXES
