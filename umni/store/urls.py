"""Stores chosen by URL: node results (`--cache`) and image blobs (`--blobs`).

Results:
* a directory, or ``sqlite:///dir`` (default): ``dir/cache.db``, blobs in ``dir/blobs``;
  ``sqlite:///path/file.db``: that file, blobs in ``blobs/`` beside it;
* ``postgresql://user@host:port/db`` (or ``postgres://``): a database shared by many machines;
  blobs then come from ``--blobs`` (a directory every machine mounts), else the user cache dir.

Blobs: a directory or ``file:///dir``; ``s3://bucket/prefix`` an S3-compatible object store
(`umni.store.objectstore`: the ``s3`` extra, endpoint from ``?endpoint_url=`` or ``AWS_ENDPOINT_URL``).
Other schemes are the extension point: `register_blob_scheme("gs", factory)` where `factory(url)`
returns a `Blobs`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from umni.store.artifacts import Blobs, BlobStore
from umni.store.location import default_cache_dir
from umni.store.locks import FileLocks
from umni.store.provenance import process_provenance
from umni.store.results import ResultStore, StoredRow, row_checksum
from umni.util.errors import ConfigError

__all__ = [
    "ResultStore", "StoredRow", "row_checksum", "process_provenance", "open_results", "open_blobs",
    "register_blob_scheme", "is_url", "is_postgres", "describe", "lock_note", "run_blobs",
]  # fmt: skip

_BLOB_SCHEMES: dict[str, Callable[[str], Blobs]] = {}


def register_blob_scheme(scheme: str, factory: Callable[[str], Blobs]) -> None:
    """Serve ``scheme://…`` blob URLs with `factory(url)`, a `Blobs` (the extension point for
    object stores other than S3)."""
    _BLOB_SCHEMES[scheme.lower()] = factory


def is_url(location: str | Path) -> bool:
    return isinstance(location, str) and "://" in location


def _scheme(location: str | Path) -> str:
    return urlsplit(str(location)).scheme.lower() if is_url(location) else ""


def _file_path(url: str, scheme: str) -> Path:
    parts = urlsplit(url)
    if parts.netloc not in ("", "localhost"):
        raise ConfigError(f"{url}: a {scheme}: URL names a local path (three slashes: {scheme}:///abs/path)")
    return Path(unquote(parts.path))


def sqlite_layout(location: str | Path) -> tuple[Path, Path]:
    """(database file, default blob dir) of a directory, ``sqlite:///dir`` or ``sqlite:///file.db``."""
    path = _file_path(str(location), "sqlite") if _scheme(location) == "sqlite" else Path(location)
    if path.suffix in (".db", ".sqlite", ".sqlite3"):
        return path, path.parent / "blobs"
    return path / "cache.db", path / "blobs"


def open_results(location: str | Path) -> tuple[ResultStore, Path | None]:
    """The result store at `location` and the blob directory that goes with it (None: none implied)."""
    scheme = _scheme(location)
    if scheme in ("", "sqlite"):
        from umni.store.sqlite import SqliteResults

        db, blobs = sqlite_layout(location)
        return SqliteResults(db), blobs
    if scheme in ("postgresql", "postgres"):
        from umni.store.postgres import PostgresResults

        return PostgresResults(str(location)), None
    raise ConfigError(
        f"--cache {location}: unknown store scheme {scheme!r} (use a directory, sqlite:///, or postgresql://)"
    )


def open_blobs(location: str | Path) -> Blobs:
    """The image blob store at a directory, ``file:///dir``, ``s3://bucket/prefix`` (or a registered scheme)."""
    scheme = _scheme(location)
    if scheme == "":
        return BlobStore(Path(location))
    if scheme == "file":
        return BlobStore(_file_path(str(location), "file"))
    if scheme == "s3" and scheme not in _BLOB_SCHEMES:
        from umni.store.objectstore import S3Blobs

        return S3Blobs(str(location))
    factory = _BLOB_SCHEMES.get(scheme)
    if factory is None:
        known = ", ".join(["file", "s3", *sorted(_BLOB_SCHEMES)])
        raise ConfigError(
            f"--blobs {location}: no blob store for scheme {scheme!r} (known: {known}; "
            "register one with umni.stores.register_blob_scheme)"
        )
    return factory(str(location))


def is_postgres(location: str | Path) -> bool:
    return _scheme(location) in ("postgresql", "postgres")


def lock_note(location: str | Path, folder: Path) -> str | None:
    """What to say at start about the locks a run into `folder` with the store at `location` relies on
    (`umni.store.locks`): nothing for a PostgreSQL store (its locks live in the database)."""
    if is_postgres(location):
        return None
    return FileLocks().note(folder)


def describe(location: str | Path) -> str:
    """`location` as recorded in run.json and the manifest: a resolved path, or a URL without password."""
    if not is_url(location):
        return str(Path(location).resolve())
    if _scheme(location) in ("postgresql", "postgres"):
        from umni.store.postgres import redact

        return redact(str(location))
    return str(location)


def run_blobs(manifest: dict[str, Any]) -> Blobs | None:
    """The blob store a run directory's images live in, from its run.json (`blobs`, else the one
    its `cache` implies; a PostgreSQL cache without `blobs` used the user cache dir's). None when
    the manifest names neither or the store cannot be opened (readers then show no images)."""
    try:
        if manifest.get("blobs"):
            return open_blobs(manifest["blobs"])
        cache = manifest.get("cache")
        if not cache:
            return None
        scheme = _scheme(cache)
        if scheme in ("", "sqlite"):
            return BlobStore(sqlite_layout(cache)[1])
        if scheme in ("postgresql", "postgres"):

            return BlobStore(default_cache_dir() / "blobs")
    except Exception:  # an unknown scheme or an unreadable folder: no images, not a crash
        return None
    return None
