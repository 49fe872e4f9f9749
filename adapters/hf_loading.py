"""Finding, classifying and loading transformers checkpoints for the `hf/...` backend.

Everything a spec can get wrong (a missing folder, a model class we cannot drive, an unknown dtype) is
decided here from config.json alone, before any weights are read, so a bad spec fails in the
constructor. Loaded models live in a process-wide cache so several specs naming the same weights (say
`understand` and `judge` bound to one VLM with different modes) hold one copy in memory.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from umni.plugin import DETECT, EMBED, GENERATE, JUDGE, UNDERSTAND, BackendError, ConfigError, missing_extra_hint

from .local_models import (  # device, dtype and folder rules are shared with diffusers; re-exported
    ModelCache,
    choose_device,
    choose_dtype,
    fingerprint_files,
    looks_local,
    probe_accelerators,
)

__all__ = [
    "DETECTOR", "EMBEDDER", "EMU3", "JANUS", "VLM", "LoadedModel", "ModelSource", "choose_device", "choose_dtype",
    "classify", "clear_cache", "load", "local_revision", "locate", "looks_local", "probe_accelerators",
]

JANUS = "janus"
EMU3 = "emu3"
VLM = "vlm"
DETECTOR = "detector"
EMBEDDER = "embedder"

#: What each kind of checkpoint can do; a VLM detects by being asked for boxes as JSON.
ROLES_BY_KIND: dict[str, frozenset[str]] = {
    JANUS: frozenset({UNDERSTAND, JUDGE, GENERATE}),
    EMU3: frozenset({UNDERSTAND, JUDGE, GENERATE}),
    VLM: frozenset({UNDERSTAND, JUDGE, DETECT}),
    DETECTOR: frozenset({DETECT}),
    EMBEDDER: frozenset({EMBED}),
}

#: Vision encoders whose pooled output is a sensible image feature (CLIP/SigLIP also in dual form).
EMBEDDER_MODEL_TYPES = frozenset({
    "dinov2", "dinov2_with_registers", "dinov3_vit", "clip", "clip_vision_model", "siglip",
    "siglip_vision_model", "siglip2", "siglip2_vision_model", "vit",
})

_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".index.json", ".pt", ".pth")


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


def local_revision(folder: Path) -> str:
    """A content fingerprint of a local checkpoint, standing in for a hub commit.

    config.json and every weight file count by their bytes (umni.filehash: streamed once, then
    remembered per file by size, mtime_ns and inode), so weights overwritten in place with a file of
    the same size are a new identity and stale predictions never come back from the cache.
    """
    weights = [path for path in folder.iterdir() if path.is_file() and path.name.endswith(_WEIGHT_SUFFIXES)]
    return fingerprint_files(folder, weights, prefix=(folder / "config.json").read_bytes())


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
    if model_type == "emu3" or "Emu3ForConditionalGeneration" in architectures:
        return EMU3
    if model_type in MODEL_FOR_ZERO_SHOT_OBJECT_DETECTION_MAPPING_NAMES:
        return DETECTOR
    if model_type in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES:
        return VLM
    if model_type in EMBEDDER_MODEL_TYPES and model_type in MODEL_MAPPING_NAMES:
        return EMBEDDER
    served = (
        "JanusForConditionalGeneration and Emu3ForConditionalGeneration (understand, judge, generate); "
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


_CACHE: ModelCache[LoadedModel] = ModelCache()


def load(source: ModelSource, kind: str, device: str, dtype: str) -> LoadedModel:
    """The model for (path, revision, device, dtype), loaded on first use and shared afterwards.

    Blocking: call it from a worker thread.
    """
    key = (source.name, source.revision, device, dtype)
    return _CACHE.get(key, lambda: _load_uncached(source, kind, device, dtype))


def clear_cache() -> None:
    """Forget every loaded model (frees memory once no backend holds a reference)."""
    _CACHE.clear()


def _load_uncached(source: ModelSource, kind: str, device: str, dtype: str) -> LoadedModel:
    import torch
    import transformers

    model_class: Any = {
        JANUS: transformers.JanusForConditionalGeneration,
        EMU3: transformers.Emu3ForConditionalGeneration,
        VLM: transformers.AutoModelForImageTextToText,
        DETECTOR: transformers.AutoModelForZeroShotObjectDetection,
        EMBEDDER: transformers.AutoModel,
    }[kind]
    processor_class = transformers.AutoImageProcessor if kind == EMBEDDER else transformers.AutoProcessor
    where: dict[str, Any] = {"revision": source.load_revision} if source.load_revision else {}
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
    if kind in (JANUS, EMU3, VLM) and not getattr(processor, "chat_template", None):
        raise ConfigError(
            f"hf/{source.name}: the processor has no chat template, so prompts cannot be laid out for this "
            "model; use a chat/instruct checkpoint (one whose folder has chat_template.jinja or a template "
            "in processor_config.json / tokenizer_config.json)"
        )
    return LoadedModel(kind=kind, model=model, processor=processor, device=device, dtype=dtype)
