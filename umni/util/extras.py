"""Which `pip install 'umni[...]'` provides a missing optional package.

Heavy dependencies (PyTorch, transformers, diffusers, OCR, the browser driver) live in extras and
are imported only when used; when one is missing, the error names the extra that brings it.
"""

from __future__ import annotations

#: top-level module name -> the extra that installs it
EXTRA_OF: dict[str, str] = {
    "torch": "hf",
    "transformers": "hf",
    "diffusers": "hf",
    "accelerate": "hf",
    "safetensors": "hf",
    "torchvision": "vision",  # Qwen-VL and LLaVA-OneVision image processors
    "torchmetrics": "girbench",
    "cv2": "girbench",
    "rapidocr_onnxruntime": "ocr",
    "onnxruntime": "ocr",
    "s3fs": "s3",  # --blobs s3://
    "selenium": "test",
    "pytest": "test",
    "hypothesis": "test",
}


def missing_extra_hint(exc: ModuleNotFoundError) -> str | None:
    """`pip install 'umni[EXTRA]'` for a module an extra provides, else None."""
    name = (exc.name or "").split(".")[0]
    extra = EXTRA_OF.get(name)
    return f"pip install 'umni[{extra}]'" if extra else None


def describe_missing(exc: ModuleNotFoundError) -> str:
    """One line for the user: what is missing and how to install it."""
    hint = missing_extra_hint(exc)
    name = (exc.name or str(exc)).split(".")[0]
    if hint:
        return f"the Python package '{name}' is not installed; it comes with an optional extra: {hint}"
    return f"the Python package '{name}' is not installed (pip install {name})"
