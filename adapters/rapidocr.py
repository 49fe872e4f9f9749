"""OCR tool backend on RapidOCR (PP-OCR detection + recognition models run by onnxruntime).

Spec: ``rapidocr/ppocr?min_confidence=0.5``. The models ship inside the ``rapidocr-onnxruntime``
wheel, so this works offline and needs no download. Protocols use it to check text drawn in
generated images (spelling, digits placed in a grid), so each line comes back with an axis-aligned
box and a confidence.

Loading the three ONNX sessions takes a noticeable fraction of a second and memory, so one engine
is built per process and shared by every backend instance. The engine keeps every line it reads;
``min_confidence`` is applied here, so backends with different thresholds still share one engine.
"""

from __future__ import annotations

import threading
from typing import Annotated, Any, ClassVar

import anyio
import numpy as np
from PIL import Image
from pydantic import Field

from umni.plugin import OCR, Backend, BackendError, BackendParams, ConfigError, OcrLine, Spec

MODELS = ("ppocr",)
DEFAULT_MIN_CONFIDENCE = 0.5

_engine: Any = None
_engine_lock = threading.Lock()
#: onnxruntime sessions may run concurrently, but RapidOCR keeps per-call settings on the engine object.
_inference_lock = threading.Lock()


def _shared_engine() -> Any:
    """The process-wide RapidOCR engine, built on first use."""
    global _engine
    with _engine_lock:
        if _engine is None:
            try:
                from rapidocr_onnxruntime import RapidOCR
            except ImportError:
                raise ConfigError(
                    "the rapidocr backend needs the 'rapidocr-onnxruntime' package: pip install 'umni[ocr]'"
                ) from None
            # text_score=0 keeps every line; each backend filters by its own min_confidence.
            _engine = RapidOCR(text_score=0.0)
        return _engine


class RapidOcrParams(BackendParams):
    """``min_confidence``: lines read with a lower confidence are dropped (the engine keeps them all)."""

    min_confidence: Annotated[float, Field(ge=0.0, le=1.0)] = DEFAULT_MIN_CONFIDENCE


class RapidOcrBackend(Backend):
    """Fills ``ocr``: lines of text with pixel boxes (x0, y0, x1, y1) and confidences."""

    provider: ClassVar[str] = "rapidocr"
    roles: ClassVar[frozenset[str]] = frozenset({OCR})
    default_concurrency: ClassVar[int] = 1  # CPU-bound; onnxruntime already uses every core
    Params = RapidOcrParams

    def __init__(self, spec: Spec) -> None:
        super().__init__(spec)
        if spec.name not in MODELS:
            raise ConfigError(f"backend spec '{spec}': unknown OCR model '{spec.name}'; available: {', '.join(MODELS)}")
        self.min_confidence: float = self.params.min_confidence
        self._engine: Any = None

    def identity(self) -> dict[str, Any]:
        # The default threshold is spelled out so that a spec naming it and one omitting it share a cache.
        return {
            "provider": self.provider,
            "name": self.spec.name,
            "params": {"min_confidence": self.min_confidence},
            "package": _package_version(),
        }

    async def start(self) -> None:
        if self._engine is None:
            self._engine = await anyio.to_thread.run_sync(_shared_engine)

    async def read_text(self, image: Image.Image) -> list[OcrLine]:
        if self._engine is None:
            raise BackendError("rapidocr/ppocr: the backend was not started (call start() first)", retryable=False)
        return await anyio.to_thread.run_sync(self._read_sync, image)

    def _read_sync(self, image: Image.Image) -> list[OcrLine]:
        pixels = np.asarray(image.convert("RGB"))[:, :, ::-1].copy()  # the engine expects BGR arrays
        try:
            with _inference_lock:
                result, _timings = self._engine(pixels)
        except Exception as exc:  # onnxruntime and OpenCV raise assorted types for odd inputs
            raise BackendError(
                f"rapidocr/ppocr failed on a {image.width}x{image.height} {image.mode} image: {exc}", retryable=False
            ) from exc
        lines = [_to_line(entry) for entry in result or []]
        return [line for line in lines if line.confidence >= self.min_confidence]


def _to_line(entry: Any) -> OcrLine:
    quad, text, score = entry[0], entry[1], entry[2]
    xs = [float(point[0]) for point in quad]
    ys = [float(point[1]) for point in quad]
    return OcrLine(text=str(text), box=(min(xs), min(ys), max(xs), max(ys)), confidence=float(score))


def _package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rapidocr-onnxruntime")
    except PackageNotFoundError:
        return "missing"
