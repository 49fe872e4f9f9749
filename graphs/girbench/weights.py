"""Where the official feature extractors' weights are, found on this machine without a network call.

``features=official`` needs DINOv3 (Uni similarity) and torch-fidelity's InceptionV3 (Visual Puzzle
FID). Loading either from the hub or a release URL on a machine without network meant a minute of
download retries and then one ``internal`` failure per case; so the run checks, before any node
runs, that each extractor its cases need is a local folder or file or already in its cache (the
Hugging Face hub cache, honouring ``HF_HOME``/``HF_HUB_CACHE``; torch's hub cache, honouring
``TORCH_HOME``), and refuses to start otherwise with one message naming the option to use instead.
A run never downloads them: that is a step the user takes once (``hf download …``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

#: The files a transformers checkpoint keeps its weights in (one file, or an index naming shards).
_WEIGHTS = ("model.safetensors", "pytorch_model.bin")
_INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")
#: The file torch-fidelity's standard InceptionV3 download is saved as (its release URL's last part),
#: under ``<torch hub dir>/checkpoints``.
INCEPTION_FILE = "weights-inception-2015-12-05-6726825d.pth"
#: The option a run without the official extractors uses instead.
INSTEAD = "--option features=embed (the run's embed role scores Uni and puzzle instead; a listed deviation)"


def _complete(folder: Path) -> bool:
    """Whether a checkpoint folder holds its config and every weight file it names."""
    if not (folder / "config.json").is_file():
        return False
    if any((folder / name).is_file() for name in _WEIGHTS):
        return True
    for name in _INDEXES:
        index = folder / name
        if index.is_file():
            try:
                shards = set(json.loads(index.read_text())["weight_map"].values())
            except (OSError, ValueError, KeyError, AttributeError):
                return False
            return all((folder / shard).is_file() for shard in shards)
    return False


def local_checkpoint(name: str, cache_dir: Path | None = None) -> Path | None:
    """The folder `name` loads from without a network call: a local folder written by
    ``save_pretrained``, or the hub repo's snapshot in the Hugging Face cache (`cache_dir`, default
    the one ``HF_HUB_CACHE``/``HF_HOME`` name); None when neither holds a complete checkpoint."""
    folder = Path(name).expanduser()
    if folder.is_dir():
        return folder if _complete(folder) else None
    from huggingface_hub import try_to_load_from_cache
    from huggingface_hub.errors import HFValidationError

    try:
        config = try_to_load_from_cache(name, "config.json", cache_dir=cache_dir)
    except HFValidationError:  # not a repo id either (a local path that does not exist)
        return None
    if not isinstance(config, str):  # None (never fetched) or a cached "does not exist"
        return None
    snapshot = Path(config).parent
    return snapshot if _complete(snapshot) else None


def inception_weights_file(weights: str) -> Path:
    """The file the InceptionV3 loads: the given path, or the standard download's place in torch's hub cache."""
    if weights:
        return Path(weights).expanduser()
    # torch.hub.get_dir()'s rule, without importing torch at run start: $TORCH_HOME, else $XDG_CACHE_HOME/torch
    torch_home = os.environ.get("TORCH_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME") or "~/.cache", "torch")
    return Path(torch_home).expanduser() / "hub" / "checkpoints" / INCEPTION_FILE


def _hub_cache() -> str:
    from huggingface_hub import constants

    return str(constants.HF_HUB_CACHE)


def missing_extractors(uni_model: str | None, fid_weights: str | None) -> list[str]:
    """One line per extractor the run needs (`uni_model` when Uni similarity is scored, `fid_weights`
    when Visual Puzzle is; None: not needed) whose weights are not on this machine."""
    problems = []
    if uni_model is not None and local_checkpoint(uni_model) is None:
        problems.append(
            f"GIR-Bench features=official scores Uni similarity with DINOv3 {uni_model!r}, which is neither a local "
            f"folder nor complete in the Hugging Face cache ({_hub_cache()}), and a run does not download it; "
            f"use {INSTEAD}, or download it first (hf download {uni_model}) or pass --option uni_model=<local folder>"
        )
    if fid_weights is not None:
        path = inception_weights_file(fid_weights)
        if not path.is_file():
            where = "the file" if fid_weights else "torch-fidelity's standard InceptionV3 weights, expected at"
            problems.append(
                f"GIR-Bench features=official scores Visual Puzzle with an InceptionV3 FID, and {where} {path} is not "
                f"there (a run does not download it); use {INSTEAD}, or pass --option fid_weights=<local .pth file>"
            )
    return problems
