"""Tool roles on transformers models: open-vocabulary detection and image embeddings.

Blocking functions; the backend runs them in a worker thread under the model's lock.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from PIL import Image

from umni.plugin import Detection

from .hf_loading import LoadedModel


def detect_zero_shot(
    loaded: LoadedModel, requests: Sequence[tuple[Image.Image, Sequence[str]]], *, threshold: float,
) -> list[list[Detection]]:
    """Boxes (pixels) for the labels asked for, from OWL-ViT / OWLv2 / Grounding DINO style detectors,
    for a batch of (image, labels) requests in one forward pass.

    The backend batches only requests with the same labels and image size, so every row's text and
    pixel tensors are exactly what they would be alone (no padding of either). Each family's processor
    knows how its boxes map back to the image (OWLv2 pads to a square, for instance), so
    post-processing is left to it with each original (height, width) as target size.
    """
    import torch

    images = [image.convert("RGB") for image, _ in requests]
    processor = loaded.processor
    targets = [(image.height, image.width) for image in images]
    grounding_dino = "input_ids" in _post_process_params(processor)
    # Grounding DINO reads one caption of dot-separated phrases; OWL models take a list of queries.
    if grounding_dino:
        text: list[Any] = [". ".join(label.lower() for label in labels) + "." for _, labels in requests]
    else:
        text = [list(labels) for _, labels in requests]
    inputs = processor(text=text, images=images, return_tensors="pt").to(loaded.model.device, dtype=loaded.model.dtype)
    with torch.inference_mode():
        outputs = loaded.model(**inputs)
    if grounding_dino:
        results = processor.post_process_grounded_object_detection(
            outputs, inputs["input_ids"], threshold=threshold, text_threshold=threshold, target_sizes=targets,
        )
    else:
        results = processor.post_process_grounded_object_detection(
            outputs, threshold=threshold, target_sizes=targets, text_labels=[list(labels) for _, labels in requests],
        )
    found: list[list[Detection]] = []
    for result, image, (_, labels) in zip(results, images, requests):
        names = (result.get("text_labels") or result.get("labels")) if grounding_dino else result["text_labels"]
        boxes = result["boxes"].float().cpu().tolist()
        scores = result["scores"].float().cpu().tolist()
        found.append([
            Detection(label=_asked_label(str(name), labels), box=_clip_box(box, image.width, image.height), score=score)
            for name, box, score in zip(names, boxes, scores)
        ])
    return found


def _clip_box(box: Sequence[float], width: int, height: int) -> tuple[float, float, float, float]:
    """Keep a box inside the image: regressed boxes may overhang the border, pixels beyond it do not exist."""
    x0, y0, x1, y1 = box
    return (min(max(x0, 0.0), width), min(max(y0, 0.0), height), min(max(x1, 0.0), width), min(max(y1, 0.0), height))


def _post_process_params(processor: object) -> tuple[str, ...]:
    import inspect

    method = getattr(processor, "post_process_grounded_object_detection", None)
    return tuple(inspect.signature(method).parameters) if method else ()


def _asked_label(name: str, labels: Sequence[str]) -> str:
    """Map a detector's phrase back to the label as the caller spelled it.

    Grounding DINO lowercases, and when asked phrases share words it may merge neighbouring tokens into
    one phrase ("car car seat", "red apple"); such a box belongs to the asked label that shares the most
    words with the phrase (the longer label on a tie), so it is not dropped for naming no label exactly."""
    phrase = name.lower().strip(" .")
    for label in labels:
        if label.lower() == phrase:
            return label
    words = set(phrase.split())
    best = max(labels, key=lambda label: (len(words & set(label.lower().split())), len(label)), default=None)
    if best is not None and words & set(best.lower().split()):
        return best
    return name


def embed_images(loaded: LoadedModel, requests: Sequence[Sequence[Image.Image]]) -> list[np.ndarray]:
    """One L2-normalised feature row per image, for a batch of requests (each a list of images) in one
    forward pass.

    Dual encoders (CLIP, SigLIP) give their projected image features; vision-only encoders (DINOv2,
    ViT) their pooled output, or the CLS token when the model has no pooler. The processors of these
    families resize (and crop) every image to one fixed size, so images stack without padding and a
    row does not depend on the others in its batch.
    """
    import torch

    model = loaded.model
    flat = [im.convert("RGB") for images in requests for im in images]
    pixels = loaded.processor(images=flat, return_tensors="pt")
    pixels = pixels.to(model.device, dtype=model.dtype)
    with torch.inference_mode():
        if hasattr(model, "get_image_features"):
            features = model.get_image_features(**pixels)
            if not isinstance(features, torch.Tensor):  # newer versions return an output object
                features = features.pooler_output
        else:
            outputs = model(**pixels)
            pooled = getattr(outputs, "pooler_output", None)
            features = pooled if pooled is not None else outputs.last_hidden_state[:, 0]
    rows = torch.nn.functional.normalize(features.float(), dim=-1).cpu().numpy()
    split: list[np.ndarray] = []
    start = 0
    for images in requests:
        split.append(rows[start:start + len(images)])
        start += len(images)
    return split
