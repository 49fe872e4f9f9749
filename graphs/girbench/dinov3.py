"""GIR-Bench-Uni image features as the official ``eval_Similarity.py`` computes them.

The official code embeds each image with DINOv3 (ViT-7B/16 from facebookresearch's torch hub
release): convert to RGB, a plain resize to 224x224 (torchvision's ``Resize`` on a PIL image, i.e.
PIL's bilinear filter, aspect ratio not kept), scale to [0, 1] and normalise with the ImageNet mean
and standard deviation, then take the model's output, the layer-normalised class token. Here the
same checkpoint is loaded through transformers (``DINOv3ViTModel``, whose ``pooler_output`` is
that token) and the preprocessing is written out with PIL and numpy, so torchvision is not needed.

The model is a hub id or a local folder (``--option uni_model=...``); tests save a tiny randomly
initialised DINOv3 to a folder and pass its path.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
from PIL import Image

from .weights import local_checkpoint

INPUT_SIZE = 224
IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
IMAGENET_STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)

_lock = threading.Lock()
_models: dict[str, Any] = {}


def official_pixels(image: Image.Image) -> np.ndarray:
    """The (3, 224, 224) float32 input the official preprocessing produces for `image`."""
    resized = image.convert("RGB").resize((INPUT_SIZE, INPUT_SIZE), Image.Resampling.BILINEAR)
    arr = np.asarray(resized, dtype=np.float32) / 255.0
    return ((arr - IMAGENET_MEAN) / IMAGENET_STD).transpose(2, 0, 1)


def _model(name: str) -> Any:
    """The model, loaded once per process; a load that failed is not retried for every case."""
    with _lock:
        if name not in _models:
            from transformers import AutoModel

            try:  # from the local folder or hub-cache snapshot when there is one: no network call
                model = AutoModel.from_pretrained(local_checkpoint(name) or name)
            except (OSError, ValueError) as exc:
                _models[name] = RuntimeError(
                    f"the Uni feature model {name!r} could not be loaded ({exc}); "
                    "pass --option uni_model=<local folder> or --option features=embed"
                )
            else:
                model.eval()
                _models[name] = model
        found = _models[name]
    if isinstance(found, Exception):
        raise found
    return found


def dinov3_features(images: Sequence[Image.Image], *, model: str) -> np.ndarray:
    """The class-token features of `images`, one row per image (float64)."""
    import torch

    net = _model(model)
    batch = torch.from_numpy(np.stack([official_pixels(im) for im in images]))
    with _lock, torch.inference_mode():
        out = net(pixel_values=batch)
    return out.pooler_output.to(torch.float64).numpy()
