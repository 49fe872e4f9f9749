"""The content-addressed image store: images kept once, as PNG files named by the sha256 of their bytes,
checked against that name whenever they are read."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import threading
from collections import OrderedDict
from pathlib import Path

from PIL import Image

from umni.store.atomic import atomic_write_bytes
from umni.store.imageref import ImageRef
from umni.store.images import encode_for_store, encode_png, load_case_image
from umni.util.storage import storage_guard

#: How many decoded images a BlobStore keeps at hand.
DECODED_KEPT = 64


class Blobs:
    """Images stored once by the sha256 of their PNG bytes: what every blob store shares.

    A store says how to keep bytes (`_keep`), fetch them (`_fetch`), tell whether a blob exists and
    still hashes to its name (`exists`, `verify`), and copy one out (`export`). Reading is checked
    here, once for every kind of store: a blob whose bytes no longer hash to its name is never
    decoded or used. Decoded images are kept for the readers that follow, since a stage's image is
    read by every question about it and decoding a PNG costs far more than copying pixels.
    """

    #: Where the blobs live, as a user wrote it (messages, run.json).
    location: str
    #: Whether `verify` is a local read, cheap enough for the scheduling path; a store on the
    #: network says False, and the runner checks a cache hit's image in a worker thread instead.
    inline_checks: bool = True

    def __init__(self) -> None:
        self._decoded: OrderedDict[str, Image.Image] = OrderedDict()  # recently opened images
        self._decoded_lock = threading.Lock()  # images are decoded in worker threads too

    # -- what a kind of store provides
    def verify(self, sha256: str) -> bool:
        """Whether the blob exists and its bytes hash to its name."""
        raise NotImplementedError

    def exists(self, sha256: str) -> bool:
        """Whether a blob is stored under this name at all (damaged or not)."""
        raise NotImplementedError

    def _keep(self, sha256: str, data: bytes) -> None:
        """Store `data` (which hashes to `sha256`) unless a sound copy is there already."""
        raise NotImplementedError

    def _fetch(self, sha256: str) -> bytes:
        """The stored bytes, unchecked; FileNotFoundError when there are none."""
        raise NotImplementedError

    def export(self, sha256: str, target: Path) -> bool:
        """Copy a sound blob to `target` (False: missing or damaged, nothing written)."""
        try:
            data = self.read_bytes(ImageRef(sha256=sha256, width=0, height=0))
        except FileNotFoundError:
            return False
        atomic_write_bytes(target, data, durable=False)
        return True

    def count(self) -> int | None:
        """How many blobs are stored (None: the store cannot tell cheaply)."""
        return None

    # -- shared
    def put_png(self, data: bytes, width: int, height: int, *, decoded: Image.Image | None = None) -> ImageRef:
        """Store PNG bytes; `decoded` (the image they encode) is kept for the readers that follow."""
        sha = hashlib.sha256(data).hexdigest()
        self._keep(sha, data)
        if decoded is not None:
            self._remember(sha, decoded)
        return ImageRef(sha256=sha, width=width, height=height)

    def put_image(self, image: Image.Image) -> ImageRef:
        """Encode and store a produced image, keeping its stored form for the readers that follow
        (`KindContext.store_image` runs this in a worker thread)."""
        stored, data = encode_for_store(image)
        return self.put_png(data, image.width, image.height, decoded=stored)

    def put(self, image: Image.Image) -> ImageRef:
        return self.put_png(encode_png(image), image.width, image.height)

    def put_file(self, path: Path) -> ImageRef:
        """Store an image file given by a case (any format PIL reads) as PNG; an unreadable, damaged
        or oversized image is an InputError naming the file."""
        return self.put(load_case_image(path))

    def has(self, ref: ImageRef) -> bool:
        return self.exists(ref.sha256)

    def read_bytes(self, ref: ImageRef) -> bytes:
        """The blob's bytes, checked against its name: FileNotFoundError when missing or damaged."""
        data = self._fetch(ref.sha256)
        if hashlib.sha256(data).hexdigest() != ref.sha256:
            raise FileNotFoundError(f"image blob {ref.sha256} in {self.location} is damaged ({len(data)} bytes that do not hash to its name)")
        return data

    def open(self, ref: ImageRef) -> Image.Image:
        """The decoded image (a private copy: callers may change it)."""
        with self._decoded_lock:
            image = self._decoded.get(ref.sha256)
        if image is None:
            image = Image.open(io.BytesIO(self.read_bytes(ref)))
            image.load()
        self._remember(ref.sha256, image)
        copy = image.copy()
        copy.info = dict(image.info)
        return copy

    def is_decoded(self, sha256: str) -> bool:
        """Whether `open` would copy a kept image rather than decode the stored bytes."""
        return sha256 in self._decoded

    def _remember(self, sha: str, image: Image.Image) -> None:
        with self._decoded_lock:
            self._decoded[sha] = image
            self._decoded.move_to_end(sha)
            if len(self._decoded) > DECODED_KEPT:
                self._decoded.popitem(last=False)


class BlobStore(Blobs):
    """Images stored as files `<root>/<aa>/<sha256>.png`, written atomically.

    A blob is trusted only if its bytes still hash to its name; `verify` checks that once per file
    version (mtime and size), so a file damaged after it was written is treated as missing (and
    rewritten by the next `put`) rather than used.
    """

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.root = Path(root)
        self.location = str(self.root)
        with storage_guard(self.root):
            self.root.mkdir(parents=True, exist_ok=True)
        self._verified: dict[str, tuple[int, int]] = {}  # sha -> (mtime_ns, size) of the file checked

    def verify(self, sha256: str) -> bool:
        path = self.path(sha256)
        try:
            stat = path.stat()
        except FileNotFoundError:
            return False
        version = (stat.st_mtime_ns, stat.st_size)
        if self._verified.get(sha256) == version:
            return True
        with storage_guard(path):
            data = path.read_bytes()
        if hashlib.sha256(data).hexdigest() != sha256:
            return False
        self._verified[sha256] = version
        return True

    def path(self, sha256: str) -> Path:
        return self.root / sha256[:2] / f"{sha256}.png"

    def exists(self, sha256: str) -> bool:
        return self.path(sha256).exists()

    def count(self) -> int:
        return sum(1 for _ in self.root.glob("??/*.png"))

    def _keep(self, sha256: str, data: bytes) -> None:
        if not self.verify(sha256):  # absent, or damaged by a crash or a disk: (re)write it
            target = self.path(sha256)
            atomic_write_bytes(target, data, durable=False)
            self._trust(sha256, target)

    def _fetch(self, sha256: str) -> bytes:
        path = self.path(sha256)
        with storage_guard(path):
            return path.read_bytes()

    def export(self, sha256: str, target: Path) -> bool:
        """Hard-link the blob to `target` when they share a file system, else copy it."""
        if not self.verify(sha256):
            return False
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(self.path(sha256), target)
        except OSError:
            shutil.copyfile(self.path(sha256), target)
        return True

    def _trust(self, sha: str, path: Path) -> None:
        """Record a blob this store just wrote from bytes it hashed, so `verify` (the report's
        export, a later reader) does not read and hash it again; a later change of the file's
        mtime or size still sends it through the full check."""
        with storage_guard(path):
            stat = path.stat()
        self._verified[sha] = (stat.st_mtime_ns, stat.st_size)
