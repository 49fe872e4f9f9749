"""Finding, classifying and loading transformers checkpoints for the `hf/...` backend.

Everything a spec can get wrong (a missing folder, a model class we cannot drive, an unknown dtype) is
decided here from config.json alone, before any weights are read, so a bad spec fails in the
constructor. Loaded models live in a process-wide cache so several specs naming the same weights (say
`understand` and `judge` bound to one VLM with different modes) hold one copy in memory.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from umni.errors import BackendError, ConfigError
from umni.extras import missing_extra_hint
from umni.filehash import file_sha256
from umni.roles import DETECT, EMBED, GENERATE, JUDGE, UNDERSTAND

from .local_models import LOAD_LOCK

JANUS = "janus"
VLM = "vlm"
DETECTOR = "detector"
EMBEDDER = "embedder"

#: What each kind of checkpoint can do; a VLM detects by being asked for boxes as JSON.
ROLES_BY_KIND: dict[str, frozenset[str]] = {
    JANUS: frozenset({UNDERSTAND, JUDGE, GENERATE}),
    VLM: frozenset({UNDERSTAND, JUDGE, DETECT}),
    DETECTOR: frozenset({DETECT}),
    EMBEDDER: frozenset({EMBED}),
}

#: Vision encoders whose pooled output is a sensible image feature (CLIP/SigLIP also in dual form).
EMBEDDER_MODEL_TYPES = frozenset({
    "dinov2", "dinov2_with_registers", "dinov3_vit", "clip", "clip_vision_model", "siglip",
    "siglip_vision_model", "siglip2", "siglip2_vision_model", "vit",
})

_DTYPE_ALIASES = {
    "bf16": "bfloat16", "bfloat16": "bfloat16",
    "fp16": "float16", "float16": "float16", "half": "float16",
    "fp32": "float32", "float32": "float32", "float": "float32",
}
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".index.json", ".pt", ".pth")


# --------------------------------------------------------------------------------------------------
# device and dtype


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
        if requested.lower() not in _DTYPE_ALIASES:
            raise ConfigError(f"dtype={requested} is not one of auto, bf16, fp16, fp32", field="dtype")
        return _DTYPE_ALIASES[requested.lower()]
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


# --------------------------------------------------------------------------------------------------
# where the checkpoint is


@dataclass(frozen=True)
class ModelSource:
    """A checkpoint located and inspected: where it is, which revision, and its config.json."""

    name: str  # hub repo id, or the resolved local folder
    local: bool
    revision: str
    config: dict[str, Any] = field(hash=False, compare=False)

    @property
    def load_revision(self) -> str | None:
        """The revision to pass to from_pretrained (none for a folder, which has no history)."""
        return None if self.local else self.revision


def looks_local(name: str) -> bool:
    """Whether a spec name means a folder rather than a hub repo id (`org/name` has one slash at most)."""
    return name.startswith(("/", "./", "../", "~", ".\\")) or name.count("/") >= 2 or Path(name).exists()


def local_revision(folder: Path) -> str:
    """A content fingerprint of a local checkpoint, standing in for a hub commit.

    config.json and every weight file count by their bytes (umni.filehash: streamed once, then
    remembered per file by size, mtime_ns and inode), so weights overwritten in place with a file of
    the same size are a new identity and stale predictions never come back from the cache.
    """
    digest = hashlib.sha256()
    digest.update((folder / "config.json").read_bytes())
    for path in sorted(folder.iterdir()):
        if path.is_file() and path.name.endswith(_WEIGHT_SUFFIXES):
            digest.update(f"\0{path.name}\0{file_sha256(path)}".encode())
    return "sha256:" + digest.hexdigest()


def locate(name: str, revision: str | None) -> ModelSource:
    """Find the checkpoint a spec names and read its config.json, without loading weights."""
    if looks_local(name):
        folder = Path(name).expanduser().resolve()
        if not folder.exists():
            raise ConfigError(f"hf/{name}: local model folder {folder} does not exist", path=folder)
        if not (folder / "config.json").is_file():
            raise ConfigError(
                f"hf/{name}: {folder} has no config.json; point at a folder written by save_pretrained",
                path=folder,
            )
        if revision:
            raise ConfigError(f"hf/{name}: revision= applies to hub repos, not to a local folder", field="revision")
        return ModelSource(str(folder), True, local_revision(folder), _read_config(folder / "config.json"))
    config_path = _fetch_hub_config(name, revision)
    # hf_hub_download returns <cache>/snapshots/<commit>/config.json: the folder name pins the commit.
    commit = config_path.parent.name
    return ModelSource(name, False, commit, _read_config(config_path))


def _read_config(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read model config: {exc}", path=path) from None


def _fetch_hub_config(repo_id: str, revision: str | None) -> Path:
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import (
        EntryNotFoundError,
        HFValidationError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    try:
        return Path(hf_hub_download(repo_id, "config.json", revision=revision))
    except HFValidationError as exc:
        raise ConfigError(f"hf/{repo_id}: not a valid hub repo id or local folder ({exc})") from None
    except RepositoryNotFoundError:
        raise ConfigError(f"hf/{repo_id}: no such hub repo (or it is private and no token is set)") from None
    except RevisionNotFoundError:
        raise ConfigError(f"hf/{repo_id}: revision '{revision}' not found", field="revision") from None
    except LocalEntryNotFoundError:
        raise ConfigError(
            f"hf/{repo_id}: config.json is not in the local hub cache and the hub cannot be reached "
            "(HF_HUB_OFFLINE set or no network); download the model first or give a local folder"
        ) from None
    except EntryNotFoundError:
        raise ConfigError(f"hf/{repo_id}: the repo has no config.json, so it is not a transformers model") from None
    except OSError as exc:  # network trouble: worth trying again later
        raise BackendError(f"hf/{repo_id}: could not fetch config.json: {exc}", retryable=True) from None


# --------------------------------------------------------------------------------------------------
# what kind of model


def classify(config: dict[str, Any], spec_name: str) -> str:
    """Which of the kinds this backend serves a config describes; ConfigError listing them otherwise."""
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES,
        MODEL_FOR_ZERO_SHOT_OBJECT_DETECTION_MAPPING_NAMES,
        MODEL_MAPPING_NAMES,
    )

    model_type = config.get("model_type", "")
    architectures = config.get("architectures") or []
    if model_type == "janus" or "JanusForConditionalGeneration" in architectures:
        return JANUS
    if model_type in MODEL_FOR_ZERO_SHOT_OBJECT_DETECTION_MAPPING_NAMES:
        return DETECTOR
    if model_type in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES:
        return VLM
    if model_type in EMBEDDER_MODEL_TYPES and model_type in MODEL_MAPPING_NAMES:
        return EMBEDDER
    served = (
        "JanusForConditionalGeneration (understand, judge, generate); "
        "chat vision-language models loadable with AutoModelForImageTextToText, e.g. "
        "Qwen2_5_VLForConditionalGeneration, Qwen3VLForConditionalGeneration, Idefics3ForConditionalGeneration, "
        "LlavaOnevisionForConditionalGeneration (understand, judge, detect); zero-shot detectors "
        + ", ".join(sorted(MODEL_FOR_ZERO_SHOT_OBJECT_DETECTION_MAPPING_NAMES.values()))
        + " (detect); vision encoders of model type "
        + ", ".join(sorted(EMBEDDER_MODEL_TYPES & set(MODEL_MAPPING_NAMES)))
        + " (embed)"
    )
    shown = ", ".join(architectures) or "no architectures"
    raise ConfigError(
        f"hf/{spec_name}: config.json describes {shown} (model_type '{model_type}'), which this backend "
        f"cannot serve; it serves {served}"
    )


# --------------------------------------------------------------------------------------------------
# loading, once per process


@dataclass
class LoadedModel:
    """Weights and pre/post-processing of one checkpoint, with the lock that serialises its use.

    One lock per model: torch modules are not safe to run from several threads at once, and running
    calls one after another keeps peak memory predictable.
    """

    kind: str
    model: Any
    processor: Any
    device: str
    dtype: str
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: The micro-batcher every backend on this model submits to (made by the backend on first use).
    batcher: Any = None


_CACHE: dict[tuple[str, str, str, str], LoadedModel] = {}
_CACHE_LOCK = threading.Lock()


def load(source: ModelSource, kind: str, device: str, dtype: str) -> LoadedModel:
    """The model for (path, revision, device, dtype), loaded on first use and shared afterwards.

    Blocking: call it from a worker thread.
    """
    key = (source.name, source.revision, device, dtype)
    with _CACHE_LOCK:  # held while loading, so two specs racing for one model load it once
        if key not in _CACHE:
            with LOAD_LOCK:
                _CACHE[key] = _load_uncached(source, kind, device, dtype)
        return _CACHE[key]


def clear_cache() -> None:
    """Forget every loaded model (frees memory once no backend holds a reference)."""
    with _CACHE_LOCK:
        _CACHE.clear()


def _load_uncached(source: ModelSource, kind: str, device: str, dtype: str) -> LoadedModel:
    import torch
    import transformers

    model_class: Any = {
        JANUS: transformers.JanusForConditionalGeneration,
        VLM: transformers.AutoModelForImageTextToText,
        DETECTOR: transformers.AutoModelForZeroShotObjectDetection,
        EMBEDDER: transformers.AutoModel,
    }[kind]
    processor_class = transformers.AutoImageProcessor if kind == EMBEDDER else transformers.AutoProcessor
    where = {"revision": source.load_revision} if source.load_revision else {}
    try:
        model = model_class.from_pretrained(source.name, dtype=getattr(torch, dtype), **where)
        processor = processor_class.from_pretrained(source.name, **where)
    except ImportError as exc:
        if "torchvision" in str(exc).lower() or getattr(exc, "name", None) == "torchvision":
            raise ConfigError(
                f"hf/{source.name}: this model's processor needs torchvision, which is not installed; "
                f"install it with {missing_extra_hint(ModuleNotFoundError(name='torchvision'))} (it must be the "
                "torchvision built for your torch version)"
            ) from exc
        raise BackendError(f"hf/{source.name}: loading failed: {exc}", retryable=False) from exc
    except (OSError, ValueError) as exc:
        raise BackendError(f"hf/{source.name}: loading failed: {exc}", retryable=False) from exc
    model.to(device).eval()
    if kind in (JANUS, VLM) and not getattr(processor, "chat_template", None):
        raise ConfigError(
            f"hf/{source.name}: the processor has no chat template, so prompts cannot be laid out for this "
            "model; use a chat/instruct checkpoint (one whose folder has chat_template.jinja or a template "
            "in processor_config.json / tokenizer_config.json)"
        )
    return LoadedModel(kind=kind, model=model, processor=processor, device=device, dtype=dtype)
