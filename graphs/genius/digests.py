"""Content hashes of case image files, computed once per file version.

Every case's graph hashes its VC reference images (the hash versions the pixel-check node) and
every record hashes its context images (the report finds the runner's stored copy by it). The same
files come up for every case and round, so hashes are memoised by (path, mtime, size): a file that
changes between runs gets a fresh hash, an unchanged one is read only once.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

from PIL import Image

from umni.plugin import check_image_file, encode_png


def file_sha256(path: Path) -> str:
    """SHA-256 of the file's bytes."""
    return _file_sha256(*_version(path))


def stored_png_sha256(path: Path) -> str:
    """SHA-256 under which the runner stores a case image: that of its PNG re-encoding, not of the file."""
    return _stored_png_sha256(*_version(path))


def _version(path: Path) -> tuple[str, int, int]:
    stat = path.stat()
    return str(path), stat.st_mtime_ns, stat.st_size


@lru_cache(maxsize=4096)
def _file_sha256(path: str, mtime_ns: int, size: int) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@lru_cache(maxsize=4096)
def _stored_png_sha256(path: str, mtime_ns: int, size: int) -> str:
    check_image_file(path)  # InputError for a file that is no image or too large to decode
    with Image.open(path) as image:
        image.load()
        return hashlib.sha256(encode_png(image)).hexdigest()
