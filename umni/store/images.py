"""Images as umni stores them (PNG with only umni's text chunks) and case images as umni reads them
(checked for damage and decompression bombs, turned upright, 8-bit)."""

from __future__ import annotations

import io
import os
import stat
import warnings
from pathlib import Path

from PIL import Image, ImageOps, PngImagePlugin

from umni.util.errors import InputError

#: Largest case image (width x height) umni decodes: a PNG header may declare 20000x20000 px in a few
#: KB, and decoding it would take gigabytes. 8192 x 8192 covers every published benchmark image.
MAX_CASE_PIXELS = 8192 * 8192

#: PNG text chunks with this prefix travel with an image (the reference backend keeps its scene there).
CARRIED_TEXT_PREFIX = "umni-"


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
