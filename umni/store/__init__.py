"""Where results live: the node-result cache (SQLite by default, PostgreSQL to share it between
machines), content-addressed image blobs, a run's own `run.db`, the INCOMPLETE marker, the store URLs
and the default cache location. Nothing here knows what a graph or a protocol is; it keeps bytes by
key and checks them when they come back.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from umni.store.atomic import atomic_write_lines, atomic_write_text
    from umni.store.blobs import Blobs, BlobStore
    from umni.store.cache import Cache, RunStore
    from umni.store.completion import MARKER, is_complete, mark_complete, mark_incomplete, require_complete
    from umni.store.hashing import canonical_json, fingerprint
    from umni.store.imageref import ImageRef
    from umni.store.images import (
        MAX_CASE_PIXELS,
        as_stored,
        check_image_file,
        encode_for_store,
        encode_png,
        load_case_image,
    )
    from umni.store.location import default_cache_dir
    from umni.store.results import Batches, ResultStore, StoredRow, row_checksum
    from umni.store.urls import describe, is_url, open_blobs, open_results, register_blob_scheme, run_blobs

__all__ = [
    "as_stored",
    "atomic_write_lines",
    "atomic_write_text",
    "Batches",
    "Blobs",
    "BlobStore",
    "Cache",
    "canonical_json",
    "check_image_file",
    "default_cache_dir",
    "describe",
    "encode_for_store",
    "encode_png",
    "fingerprint",
    "ImageRef",
    "is_complete",
    "is_url",
    "load_case_image",
    "mark_complete",
    "mark_incomplete",
    "MARKER",
    "MAX_CASE_PIXELS",
    "open_blobs",
    "open_results",
    "register_blob_scheme",
    "require_complete",
    "ResultStore",
    "row_checksum",
    "run_blobs",
    "RunStore",
    "StoredRow",
]

#: Which submodule each name lives in, looked up on first use (PEP 562): a reader of one part (the
#: blob store, the INCOMPLETE marker; `umni view` at start) does not import the SQLite cache, the
#: result store and their dependencies with it.
_HOME = {
    **dict.fromkeys(["atomic_write_lines", "atomic_write_text"], "atomic"),
    **dict.fromkeys(["Blobs", "BlobStore"], "blobs"),
    **dict.fromkeys(["canonical_json", "fingerprint"], "hashing"),
    **dict.fromkeys(["ImageRef"], "imageref"),
    **dict.fromkeys(["MAX_CASE_PIXELS", "as_stored", "check_image_file", "encode_for_store", "encode_png", "load_case_image"], "images"),
    **dict.fromkeys(["Cache", "RunStore"], "cache"),
    **dict.fromkeys(["MARKER", "is_complete", "mark_complete", "mark_incomplete", "require_complete"], "completion"),
    **dict.fromkeys(["default_cache_dir"], "location"),
    **dict.fromkeys(["Batches", "ResultStore", "StoredRow", "row_checksum"], "results"),
    **dict.fromkeys(["describe", "is_url", "open_blobs", "open_results", "register_blob_scheme", "run_blobs"], "urls"),
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'umni.store' has no attribute {name!r}")
    return getattr(import_module(f"umni.store.{home}"), name)
