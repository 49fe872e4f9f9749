"""Plumbing shared by the backends that load model weights into this process (transformers, diffusers).

Where to run (device), in what precision (dtype), whether a spec names a folder or a hub repo, how a
folder's weights are fingerprinted for the cache identity, and the process-wide cache of loaded
models are the same questions for every local backend, so they are answered once here.

Loading is serialised process-wide: ``from_pretrained`` in both libraries builds modules under temporarily
patched global torch state (accelerate's empty-weights context swaps ``nn.Module.register_parameter`` for the
whole process), so a second model loading in another thread at the same moment gets parameters left on the
``meta`` device. Backends start side by side, so every local load takes ``LOAD_LOCK`` (``ModelCache.get``
does).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Hashable, Iterable
from pathlib import Path
from typing import Generic, TypeVar

from umni.plugin import ConfigError, file_sha256

__all__ = [
    "DTYPE_ALIASES",
    "LOAD_LOCK",
    "ModelCache",
    "choose_device",
    "choose_dtype",
    "fingerprint_files",
    "looks_local",
    "probe_accelerators",
]

LOAD_LOCK = threading.RLock()

T = TypeVar("T")

DTYPE_ALIASES = {
    "bf16": "bfloat16", "bfloat16": "bfloat16",
    "fp16": "float16", "float16": "float16", "half": "float16",
    "fp32": "float32", "float32": "float32", "float": "float32",
}


def choose_device(requested: str | None, *, cuda: bool, mps: bool) -> str:
    """The device to run on: the one asked for, else the fastest available (cuda > mps > cpu)."""
    if requested and requested != "auto":
        kind = requested.split(":", 1)[0]
        if kind not in ("cpu", "cuda", "mps"):
            raise ConfigError(f"device={requested} is not one of auto, cpu, cuda, cuda:N, mps", field="device")
        if kind == "cuda" and not cuda:
            raise ConfigError(f"device={requested} asked for, but torch sees no CUDA device", field="device")
        if kind == "mps" and not mps:
            raise ConfigError(f"device={requested} asked for, but torch sees no MPS device", field="device")
        return requested
    if cuda:
        return "cuda"
    if mps:
        return "mps"
    return "cpu"


def choose_dtype(requested: str | None, device: str, *, bf16_supported: bool) -> str:
    """The weight dtype: the one asked for, else bf16 on a GPU that has it, fp16 on other GPUs, fp32 on CPU.

    Half precision on CPU is slow and poorly supported by many kernels, hence fp32 there.
    """
    if requested and requested != "auto":
        if requested.lower() not in DTYPE_ALIASES:
            raise ConfigError(f"dtype={requested} is not one of auto, bf16, fp16, fp32", field="dtype")
        return DTYPE_ALIASES[requested.lower()]
    kind = device.split(":", 1)[0]
    if kind == "cuda":
        return "bfloat16" if bf16_supported else "float16"
    if kind == "mps":
        return "float16"
    return "float32"


def probe_accelerators() -> tuple[bool, bool, bool]:
    """(cuda available, mps available, cuda supports bf16) as torch sees this machine."""
    import torch

    cuda = torch.cuda.is_available()
    mps = bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())
    bf16 = bool(cuda and torch.cuda.is_bf16_supported())
    return cuda, mps, bf16


def looks_local(name: str) -> bool:
    """Whether a spec name means a folder rather than a hub repo id (`org/name` has one slash at most)."""
    return name.startswith(("/", "./", "../", "~", ".\\")) or name.count("/") >= 2 or Path(name).exists()


def fingerprint_files(root: Path, files: Iterable[Path], *, prefix: bytes = b"") -> str:
    """``sha256:`` over ``prefix`` and each file's name (relative to ``root``) and content hash.

    Contents are hashed by umni.filehash, which streams each file once and remembers the result by
    size, mtime_ns and inode, so a rerun does not read gigabytes again while weights overwritten in
    place with a file of the same size still change the identity.
    """
    digest = hashlib.sha256(prefix)
    for path in sorted(files):
        digest.update(f"\0{path.relative_to(root).as_posix()}\0{file_sha256(path)}".encode())
    return "sha256:" + digest.hexdigest()


class ModelCache(Generic[T]):
    """Loaded models by key, one copy per process, so several specs naming the same weights share them."""

    def __init__(self) -> None:
        self._entries: dict[Hashable, T] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, load: Callable[[], T]) -> T:
        """The entry for ``key``, loaded (under ``LOAD_LOCK``) on first use. Blocking: call in a worker thread.

        The cache's own lock is held while loading, so two specs racing for one model load it once.
        """
        with self._lock:
            if key not in self._entries:
                with LOAD_LOCK:
                    self._entries[key] = load()
            return self._entries[key]

    def clear(self) -> None:
        """Forget every entry (frees memory once no backend holds a reference)."""
        with self._lock:
            self._entries.clear()
