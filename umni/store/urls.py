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

Credentials (`umni.util.credentials`): a blobs URL takes none, whatever its scheme (user information,
a key, secret or token parameter): it is refused, naming where they go instead. A PostgreSQL URL may
carry its password; it is shown and recorded without it (`describe`). A libpq connection string
(``host=… password=…``) is refused, not taken for a folder of that name.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from umni.util.credentials import redact_url, refuse_url_credentials
from umni.util.errors import ConfigError
from umni.util.lazy import lazy_front

# The stores themselves (and PIL, asyncio, platformdirs with them) are imported where one is opened:
# reading a sweep file checks its store URLs, and a sweep task whose units are done opens no store.
if TYPE_CHECKING:
    from umni.store.blobs import Blobs
    from umni.store.provenance import process_provenance as process_provenance
    from umni.store.results import ResultStore as ResultStore
    from umni.store.results import StoredRow as StoredRow
    from umni.store.results import row_checksum as row_checksum
    from umni.store.runfolder import Manifest

#: Names this module re-exports, loaded on first use.
_EXPORTS = {
    "ResultStore": "umni.store.results",
    "StoredRow": "umni.store.results",
    "row_checksum": "umni.store.results",
    "process_provenance": "umni.store.provenance",
}

__all__ = [
    "ResultStore", "StoredRow", "row_checksum", "process_provenance", "open_results", "open_blobs",
    "register_blob_scheme", "is_url", "is_postgres", "describe", "lock_note", "run_blobs", "run_blobs_location",
    "check_blobs", "check_results",
]  # fmt: skip

_BLOB_SCHEMES: dict[str, Callable[[str], Blobs]] = {}
#: Where each blob scheme's client reads its credentials, for the refusal of a URL that holds them.
_CREDENTIALS_FROM: dict[str, str] = {}
_ANY_CREDENTIALS = "give them to the object store's client the way it reads them (its environment variables or configuration)"


def register_blob_scheme(scheme: str, factory: Callable[[str], Blobs], *, credentials_from: str | None = None) -> None:
    """Serve ``scheme://…`` blob URLs with `factory(url)`, a `Blobs` (the extension point for
    object stores other than S3); `credentials_from` tells a user who put credentials in the URL
    where they go instead (e.g. "set GOOGLE_APPLICATION_CREDENTIALS")."""
    _BLOB_SCHEMES[scheme.lower()] = factory
    if credentials_from:
        _CREDENTIALS_FROM[scheme.lower()] = credentials_from


def is_url(location: str | Path) -> bool:
    return isinstance(location, str) and "://" in location


def _scheme(location: str | Path) -> str:
    return urlsplit(str(location)).scheme.lower() if is_url(location) else ""


def _file_path(url: str, scheme: str) -> Path:
    parts = urlsplit(url)
    if parts.netloc not in ("", "localhost"):
        raise ConfigError(f"{redact_url(url, keep_user=False)}: a {scheme}: URL names a local path (three slashes: {scheme}:///abs/path)")
    return Path(unquote(parts.path))


#: libpq's connection-string keywords, for telling ``host=… dbname=…`` from a folder name.
_LIBPQ_KEYWORDS = frozenset({"host", "hostaddr", "port", "dbname", "user", "password", "passfile", "service", "sslmode", "options"})
_LIBPQ_PAIR = re.compile(r"\s*([A-Za-z_]+)\s*=\s*(?:'(?:[^'\\]|\\.)*'|\S*)")


def _is_connection_string(text: str) -> bool:
    """Whether `text` is a libpq key=value connection string (``host=h dbname=d password=…``)."""
    at, keys = 0, []
    while at < len(text.rstrip()):
        pair = _LIBPQ_PAIR.match(text, at)
        if pair is None or pair.end() == at:
            return False
        keys.append(pair.group(1).lower())
        at = pair.end()
    return any(key in _LIBPQ_KEYWORDS for key in keys)


def check_results(location: str | Path) -> None:
    """Refuse a result store setting that cannot be one, before anything is opened or made: a libpq
    connection string (it would become a folder named after it, password and all)."""
    if not is_url(location) and _is_connection_string(str(location)):
        raise ConfigError(
            "--cache: a libpq connection string (key=value …) is not a store location; give a URL, "
            "postgresql://USER@HOST:PORT/DBNAME, with the password in PGPASSWORD or ~/.pgpass"
        )


def check_blobs(location: str | Path) -> None:
    """Refuse a blobs URL that carries a credential (before anything is opened or made): it would
    be recorded in run.json; the message names the environment variables to use instead."""
    if not is_url(location):
        return
    scheme = _scheme(location)
    remedy = _CREDENTIALS_FROM.get(scheme, _ANY_CREDENTIALS)
    if scheme == "s3" and scheme not in _CREDENTIALS_FROM:
        from umni.store.objectstore import CREDENTIALS_FROM as remedy
    refuse_url_credentials(str(location), setting="--blobs", remedy=remedy)


def sqlite_layout(location: str | Path) -> tuple[Path, Path]:
    """(database file, default blob dir) of a directory, ``sqlite:///dir`` or ``sqlite:///file.db``."""
    path = _file_path(str(location), "sqlite") if _scheme(location) == "sqlite" else Path(location)
    if path.suffix in (".db", ".sqlite", ".sqlite3"):
        return path, path.parent / "blobs"
    return path / "cache.db", path / "blobs"


def open_results(location: str | Path) -> tuple[ResultStore, Path | None]:
    """The result store at `location` and the blob directory that goes with it (None: none implied)."""
    check_results(location)
    scheme = _scheme(location)
    if scheme in ("", "sqlite"):
        from umni.store.sqlite import SqliteResults

        db, blobs = sqlite_layout(location)
        return SqliteResults(db), blobs
    if scheme in ("postgresql", "postgres"):
        from umni.store.postgres import PostgresResults

        return PostgresResults(str(location)), None
    raise ConfigError(
        f"--cache {describe(location)}: unknown store scheme {scheme!r} (use a directory, sqlite:///, or postgresql://)"
    )


def open_blobs(location: str | Path) -> Blobs:
    """The image blob store at a directory, ``file:///dir``, ``s3://bucket/prefix`` (or a registered scheme)."""
    from umni.store.blobs import BlobStore

    check_blobs(location)
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
            f"--blobs {describe(location)}: no blob store for scheme {scheme!r} (known: {known}; "
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
    from umni.store.locks import FileLocks

    return FileLocks().note(folder)


def describe(location: str | Path) -> str:
    """`location` as shown and recorded (run.json, `umni status`, messages): a resolved path, or a
    URL without its credentials (`redact_url`)."""
    if not is_url(location):
        return str(Path(location).resolve())
    return redact_url(str(location))


def run_blobs_location(manifest: Manifest) -> str | Path | None:
    """Where a run directory's images live, from its run.json: `blobs`, else the blob folder its
    `cache` implies (a PostgreSQL cache without `blobs` used the user cache dir's); None when the
    manifest names neither."""
    if manifest.blobs:
        return manifest.blobs
    cache = manifest.cache
    if not cache:
        return None
    scheme = _scheme(cache)
    if scheme in ("", "sqlite"):
        return sqlite_layout(cache)[1]
    if scheme in ("postgresql", "postgres"):
        from umni.store.location import default_cache_dir

        return default_cache_dir() / "blobs"
    return None


def run_blobs(manifest: Manifest) -> Blobs | None:
    """The blob store at `run_blobs_location`; None when the manifest names none or the store
    cannot be opened (readers then show no images; the viewer opens it itself, to say why)."""
    try:
        location = run_blobs_location(manifest)
        return None if location is None else open_blobs(location)
    except Exception:  # an unknown scheme or an unreadable folder: no images, not a crash
        return None


__getattr__, __dir__ = lazy_front(__name__, _EXPORTS, globals())
