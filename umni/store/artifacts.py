"""Artifacts: what nodes produce and consume, and the content-addressed image store.

Images are stored once, as PNG files named by the sha256 of their bytes, and passed around as
`ImageRef` (hash and size). Everything else a node produces is a small JSON-able record. Hashing a
value (`fingerprint`) is how the cache tells whether a node's inputs changed.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import stat
import tempfile
import threading
import warnings
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from PIL import Image, ImageOps, PngImagePlugin
from pydantic import BaseModel, ConfigDict

from umni.util import jsontext
from umni.util.errors import InputError
from umni.util.secrets import scrub
from umni.util.storage import file_mode, storage_guard

#: How many decoded images a BlobStore keeps at hand.
DECODED_KEPT = 64

#: Largest case image (width x height) umni decodes: a PNG header may declare 20000x20000 px in a few
#: KB, and decoding it would take gigabytes. 8192 x 8192 covers every published benchmark image.
MAX_CASE_PIXELS = 8192 * 8192

#: PNG text chunks with this prefix travel with an image (the reference backend keeps its scene there).
CARRIED_TEXT_PREFIX = "umni-"


class ImageRef(BaseModel):
    """A stored image, by content hash."""

    model_config = ConfigDict(frozen=True)

    sha256: str
    width: int
    height: int

    @property
    def filename(self) -> str:
        return f"{self.sha256}.png"


def _encode(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot fingerprint a value of type {type(value).__name__}")


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no spaces: equal values give equal text, so equal hashes. The text
    of `json.dumps` with those options (every existing key depends on it), made fast (`umni.util.jsontext`)."""
    return jsontext.canonical(value, _encode)


def fingerprint(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()


def as_stored(image: Image.Image) -> Image.Image:
    """The image exactly as reading its stored PNG back gives it: a PNG-native mode, and only the
    umni text chunks. Readers of a fresh image get this, so a resumed run sees the same input."""
    stored = image.copy() if image.mode in ("RGB", "RGBA", "L") else image.convert("RGB")
    stored.info = {
        k: v for k, v in image.info.items() if isinstance(k, str) and k.startswith(CARRIED_TEXT_PREFIX) and isinstance(v, str)
    }
    return stored


def encode_png(image: Image.Image) -> bytes:
    """PNG bytes of `image`, keeping the umni text chunks it carries and nothing else variable."""
    stored = as_stored(image)
    info = PngImagePlugin.PngInfo()
    for key, value in sorted(stored.info.items()):
        if isinstance(key, str) and isinstance(value, (str, bytes)):  # as_stored keeps only text chunks
            info.add_text(key, value)
    buffer = io.BytesIO()
    stored.save(buffer, format="PNG", pnginfo=info, compress_level=1)
    return buffer.getvalue()


def encode_for_store(image: Image.Image) -> tuple[Image.Image, bytes]:
    """`as_stored(image)` and its PNG bytes, in one pass (run in a worker thread by the runner)."""
    stored = as_stored(image)
    return stored, encode_png(stored)


def _atomic_write(path: Path, data: bytes | Iterable[bytes], *, durable: bool = True) -> None:
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
    _atomic_write(path, scrub(text).encode())


def atomic_write_lines(path: Path, lines: Iterable[str]) -> None:
    """`atomic_write_text` of the lines joined, written as they come (each scrubbed: a credential
    never spans lines, which are JSON objects with their newlines escaped)."""
    _atomic_write(path, (scrub(line).encode() for line in lines))


def check_image_file(path: str | Path, *, max_pixels: int = MAX_CASE_PIXELS) -> tuple[int, int]:
    """(width, height) of a case image, after reading its header and checking its structure.

    Raises InputError naming the file when it is missing, not an image Pillow reads, damaged, or
    larger than `max_pixels` (a decompression bomb) — all things the user fixes in the case folder,
    so `umni cases check` reports them and a run records them as `input` failures.
    """
    path = Path(path)
    try:
        kind = os.stat(path).st_mode
    except FileNotFoundError:
        raise InputError("image file not found", path=path) from None
    except OSError as exc:
        raise InputError(f"image file cannot be read ({exc.strerror})", path=path) from None
    if not stat.S_ISREG(kind):  # a FIFO would block the read forever; a folder is no image
        what = "a FIFO (named pipe)" if stat.S_ISFIFO(kind) else "a folder" if stat.S_ISDIR(kind) else "not a regular file"
        raise InputError(f"is {what}, not an image file", path=path)
    try:
        with warnings.catch_warnings():  # the size is checked below, against MAX_CASE_PIXELS
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            opened = Image.open(path)
        with opened as image:
            width, height = image.size
            if width * height > max_pixels:
                raise InputError(
                    f"image of {width}x{height} px exceeds the limit of {max_pixels} px (MAX_CASE_PIXELS)", path=path
                )
            image.verify()  # chunk structure and checksums, without decoding the pixels
    except InputError:
        raise
    except FileNotFoundError:
        raise InputError("image file not found", path=path) from None
    except Image.DecompressionBombError as exc:
        raise InputError(f"image is too large to decode safely ({exc})", path=path) from None
    except Exception as exc:  # UnidentifiedImageError, truncated or corrupt data, a folder...
        reason = "not an image file umni can read" if isinstance(exc, Image.UnidentifiedImageError) else f"damaged image ({exc})"
        raise InputError(reason, path=path) from None
    return width, height


def load_case_image(path: str | Path, *, max_pixels: int = MAX_CASE_PIXELS) -> Image.Image:
    """The decoded case image, checked as `check_image_file` does; decoding errors are InputError."""
    check_image_file(path, max_pixels=max_pixels)
    try:
        with Image.open(path) as image:
            image.load()
            upright = ImageOps.exif_transpose(image)  # a photo tagged "rotate 90°" reaches the model upright
            if upright.mode in ("RGB", "RGBA", "L"):
                return upright.copy() if upright is image else upright  # keeps .info
            if upright.mode in WIDE_GREY_MODES:
                return _scaled_to_8_bits(upright)
            return upright.convert("RGB")
    except Exception as exc:  # truncated pixel data found only on decoding
        raise InputError(f"damaged image ({exc})", path=path) from None


#: Pillow's modes for 16-bit (and 32-bit integer) grey images, e.g. a 16-bit PNG.
WIDE_GREY_MODES = frozenset({"I;16", "I;16B", "I;16L", "I;16N", "I"})


def _scaled_to_8_bits(image: Image.Image) -> Image.Image:
    """A 16-bit grey image as 8-bit grey, scaled over the full range (Pillow's own conversion clips
    at 255, which turns a full-range gradient into two levels)."""
    import numpy as np  # only for such images: readers of the blob store (the viewer) start without it

    wide = np.asarray(image, dtype=np.int64).clip(0, 65535)
    grey = Image.fromarray(((wide * 255 + 32767) // 65535).astype(np.uint8), "L")
    grey.info = dict(image.info)
    return grey


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
        _atomic_write(target, data, durable=False)
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
            _atomic_write(target, data, durable=False)
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
