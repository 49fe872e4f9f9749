"""Reasoning perception: read the green region an editing model painted, and score it by IoU.

The model is asked to paint the target region solid green (#00FF00) and leave the rest alone; the
painted region is read back as a binary mask and compared with the ground-truth mask at 512x512.
This follows the official ``eval_ReasoningPerception.py`` step for step: resizing, Lab conversion and
Canny edges use OpenCV itself (``cv2``, so the rounding is OpenCV's); the morphology and component
steps are numpy/scipy with the same kernels and border rules (checked against OpenCV in the tests).

Thresholds (all official defaults, as the released script runs them):

- **Colour step.** A pixel is green when R <= 100, G >= 155 and B <= 100 (tolerance 100 around pure
  green). The official code also ORs a second box of ±tolerance around RGB (123, 159, 87), but it
  computes that box in uint8, so at tolerance 100 the bounds wrap around (lower blue 243 > upper
  blue 187) and the box matches nothing: the published numbers used the first box alone, and so do
  we. The raw mask is then opened (3x3 square), closed (5x5 square), components (8-connected)
  smaller than max(50 px, 0.05 % of the image) are dropped, and it is closed again (3x3 square).
- **Channel-ratio fallback**, used only when the colour step finds nothing (a translucent or
  off-hue green): G / R > 1.15 and G / B > 1.15 and, when the unedited image is given, G rose by
  more than 10. Seeds are opened (3x3 cross), closed (5x5 disc), and a component is kept when it has
  at least 200 px, a mean HSV saturation of at least 60 (0-255 scale) and, with the original, a mean
  green gain of at least 15. The seeds are grown as officially (`grow_region`: up to 5 one-pixel
  steps into neighbouring pixels within Lab distance 6 of the running mean that are not Canny
  edges), then closed (3x3 cross) and holes are filled. Without the original image the gain tests
  cannot be applied and only the ratios and saturation decide.
- **Small regions**: finally every component smaller than 3 % of the image is dropped.

Hole filling reproduces the official flood fill from the top-left pixel, including its quirks: a
background area cut off from that corner counts as a hole, and if the seed mask covers the corner
the whole image becomes the mask.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from PIL import Image
from scipy import ndimage

#: Both masks are compared at this size (the official target shape).
IOU_SIZE = 512

_RECT3 = np.ones((3, 3), dtype=bool)
_RECT5 = np.ones((5, 5), dtype=bool)
_CROSS3 = np.array([[0, 1, 0], [1, 1, 1], [0, 1, 0]], dtype=bool)  # OpenCV's 3x3 ellipse
_DISC5 = np.array(
    [[0, 0, 1, 0, 0], [1, 1, 1, 1, 1], [1, 1, 1, 1, 1], [1, 1, 1, 1, 1], [0, 0, 1, 0, 0]], dtype=bool
)  # OpenCV's 5x5 ellipse
_EIGHT = np.ones((3, 3), dtype=bool)  # 8-connectivity for labelling
_FOUR = _CROSS3  # 4-connectivity (flood fill)


@dataclass(frozen=True)
class GreenMaskSettings:
    """Thresholds of the green-mask extraction; defaults are the official run's (see module doc)."""

    tolerance: int = 100
    min_region_fraction: float = 0.03
    speck_fraction: float = 0.0005
    speck_min_px: int = 50
    ratio: float = 1.15
    min_green_gain: int = 10
    seed_min_px: int = 200
    seed_min_mean_gain: float = 15.0
    seed_min_saturation: float = 60.0
    lab_sigma: float = 6.0
    grow_steps: int = 5


@dataclass(frozen=True)
class PerceptionScore:
    """IoU of one edit, and which extraction step produced the mask (``colour`` or ``ratio``)."""

    iou: float
    method: Literal["colour", "ratio"]
    predicted_px: int
    target_px: int


# ---------------------------------------------------------------------------------------------------
# Image plumbing with OpenCV's conventions


def as_rgb_array(image: Any) -> np.ndarray:
    """An (H, W, 3) uint8 RGB array from a PIL image or an array (gray or RGBA accepted)."""
    if isinstance(image, Image.Image):
        return np.asarray(image.convert("RGB"), dtype=np.uint8)
    arr = np.asarray(image)
    if arr.ndim == 2:
        arr = np.stack([arr] * 3, axis=-1)
    if arr.ndim != 3 or arr.shape[2] not in (3, 4):
        raise ValueError(f"expected an RGB image, got an array of shape {arr.shape}")
    return np.ascontiguousarray(arr[:, :, :3]).astype(np.uint8)


def binary_mask(mask: Any) -> np.ndarray:
    """A ground-truth mask as booleans: gray level above 127 (the official threshold)."""
    if isinstance(mask, Image.Image):
        arr = np.asarray(mask.convert("L"))
    else:
        arr = np.asarray(mask)
        if arr.dtype == bool:
            return arr
        if arr.ndim == 3:
            arr = np.asarray(Image.fromarray(as_rgb_array(arr)).convert("L"))
    return arr > 127


def resize_linear(image: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """Bilinear resize to (height, width) with OpenCV's INTER_LINEAR, as the official code does
    (OpenCV's fixed-point arithmetic rounds differently from a float implementation by up to 1)."""
    import cv2

    if image.shape[:2] == tuple(size):
        return image
    return cv2.resize(np.ascontiguousarray(image), (size[1], size[0]), interpolation=cv2.INTER_LINEAR)


def resize_nearest(mask: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """Nearest-neighbour resize to (height, width) with OpenCV's INTER_NEAREST."""
    import cv2

    if mask.shape[:2] == tuple(size):
        return mask
    if mask.dtype == bool:
        return resize_nearest(mask.astype(np.uint8), size).astype(bool)
    return cv2.resize(np.ascontiguousarray(mask), (size[1], size[0]), interpolation=cv2.INTER_NEAREST)


def _erode(mask: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    # Outside the image counts as foreground for erosion (OpenCV's default border), so masks that
    # touch the edge are not eaten from outside.
    return ndimage.binary_erosion(mask, structure=kernel, border_value=1)


def _dilate(mask: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    return ndimage.binary_dilation(mask, structure=kernel, border_value=0)


def morph_open(mask: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    return _dilate(_erode(mask, kernel), kernel)


def morph_close(mask: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    return _erode(_dilate(mask, kernel), kernel)


def drop_small_components(mask: np.ndarray, min_px: float) -> np.ndarray:
    """Keep 8-connected components with at least `min_px` pixels."""
    labels, count = ndimage.label(mask, structure=_EIGHT)
    if count == 0:
        return mask.copy()
    sizes = np.bincount(labels.ravel())
    keep = sizes >= min_px
    keep[0] = False
    return keep[labels]


def _fill_holes_from_corner(mask: np.ndarray) -> np.ndarray:
    """The official hole filling: everything not 4-connected to the top-left background joins the mask."""
    if mask[0, 0]:
        return np.ones_like(mask)
    labels, _ = ndimage.label(~mask, structure=_FOUR)
    return labels != labels[0, 0]


def _saturation(rgb: np.ndarray) -> np.ndarray:
    """HSV saturation on OpenCV's 0-255 scale."""
    hi = rgb.max(axis=2).astype(np.float64)
    lo = rgb.min(axis=2).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where(hi > 0, np.rint(255.0 * (hi - lo) / hi), 0.0)
    return s


# ---------------------------------------------------------------------------------------------------
# Extraction


def _colour_step(rgb: np.ndarray, settings: GreenMaskSettings) -> np.ndarray:
    r, g, b = (rgb[:, :, i].astype(np.int16) for i in range(3))
    tol = settings.tolerance
    mask = (r <= tol) & (g >= 255 - tol) & (b <= tol)
    mask = morph_open(mask, _RECT3)
    mask = morph_close(mask, _RECT5)
    mask = drop_small_components(mask, max(settings.speck_min_px, mask.size * settings.speck_fraction))
    return morph_close(mask, _RECT3)


def _ratio_step(rgb: np.ndarray, original: np.ndarray | None, settings: GreenMaskSettings) -> np.ndarray:
    r, g, b = (rgb[:, :, i].astype(np.float32) for i in range(3))
    eps = np.float32(1e-6)
    seeds = (g / (r + eps) > settings.ratio) & (g / (b + eps) > settings.ratio)
    gain = None
    if original is not None:
        gain = rgb[:, :, 1].astype(np.int16) - original[:, :, 1].astype(np.int16)
        seeds &= gain > settings.min_green_gain
    seeds = morph_close(morph_open(seeds, _CROSS3), _DISC5)
    labels, count = ndimage.label(seeds, structure=_EIGHT)
    if count == 0:
        return seeds
    index = np.arange(1, count + 1)
    sizes = ndimage.sum_labels(np.ones_like(labels), labels, index)
    keep = (sizes >= settings.seed_min_px) & (
        ndimage.mean(_saturation(rgb), labels, index) >= settings.seed_min_saturation
    )
    if gain is not None:
        keep &= ndimage.mean(gain.astype(np.float64), labels, index) >= settings.seed_min_mean_gain
    kept = np.concatenate([[False], keep])[labels]
    if not kept.any():
        return kept
    grown = grow_region(rgb, kept, lab_sigma=settings.lab_sigma, steps=settings.grow_steps)
    return _fill_holes_from_corner(morph_close(grown, _CROSS3))


def grow_region(rgb: np.ndarray, seeds: np.ndarray, *, lab_sigma: float = 6.0, steps: int = 5) -> np.ndarray:
    """The official region growing of the fallback seeds, step by step.

    Colours are compared in OpenCV's 8-bit Lab. Each step looks at the pixels next to the region
    (3x3 neighbourhood) that are not on an edge (Canny with thresholds 50 and 120 on the edited
    image, widened by a 3x3 square) and adds those within `lab_sigma` (Euclidean) of the region's
    running mean colour; the mean then absorbs the added pixels. It stops after `steps` steps or
    when a step adds nothing.
    """
    import cv2

    region = seeds.astype(bool).copy()
    if not region.any():
        return region
    bgr = np.ascontiguousarray(rgb[:, :, ::-1])
    lab = cv2.cvtColor(bgr, cv2.COLOR_BGR2Lab).astype(np.float32)
    mean = lab[region].mean(axis=0)
    edges = cv2.dilate(cv2.Canny(bgr, 50, 120), np.ones((3, 3), np.uint8)) > 0
    square = np.ones((3, 3), np.uint8)
    for _ in range(steps):
        around = cv2.dilate(region.astype(np.uint8), square) > 0
        candidates = around & ~region & ~edges
        if not candidates.any():
            break
        accept = candidates & (((lab - mean) ** 2).sum(axis=2) <= lab_sigma**2)
        added = int(accept.sum())
        if added == 0:
            break
        size = int(region.sum())
        mean = (mean * size + lab[accept].sum(axis=0)) / (size + added)
        region |= accept
    return region


def extract_green_mask(
    edited: Any, original: Any | None = None, settings: GreenMaskSettings = GreenMaskSettings()
) -> tuple[np.ndarray, Literal["colour", "ratio"]]:
    """The painted-green region of `edited` as a boolean mask, and the step that found it.

    Works at the image's own size (the scorer resizes to 512 first). `original`, the unedited
    input, sharpens the fallback by requiring the green to have increased; see the module doc for
    every threshold.
    """
    rgb = as_rgb_array(edited)
    colour = _colour_step(rgb, settings)
    if colour.any():
        mask, method = colour, "colour"
    else:
        orig = None
        if original is not None:
            orig = as_rgb_array(original)
            if orig.shape != rgb.shape:
                orig = resize_linear(orig, rgb.shape[:2])
        mask, method = _ratio_step(rgb, orig, settings), "ratio"
    min_px = int(mask.size * settings.min_region_fraction)
    return drop_small_components(mask, min_px), method  # type: ignore[return-value]


def mask_iou(predicted: np.ndarray, target: np.ndarray) -> float:
    """Intersection over union of two boolean masks; two empty masks agree perfectly (1.0), as in
    the official code."""
    pred = np.asarray(predicted, dtype=bool)
    gt = np.asarray(target, dtype=bool)
    if pred.shape != gt.shape:
        raise ValueError(f"mask shapes differ: {pred.shape} vs {gt.shape}")
    union = np.logical_or(pred, gt).sum()
    if union == 0:
        return 1.0
    return float(np.logical_and(pred, gt).sum() / union)


def reasoning_perception_iou(
    edited: Any,
    target_mask: Any,
    original: Any | None = None,
    *,
    size: int = IOU_SIZE,
    settings: GreenMaskSettings = GreenMaskSettings(),
) -> PerceptionScore:
    """Score one edit: resize the edited (and original) image to size x size (bilinear), extract the
    green mask there, binarise the ground truth (> 127) and resize it (nearest), then take IoU."""
    shape = (size, size)
    rgb = resize_linear(as_rgb_array(edited), shape)
    orig = resize_linear(as_rgb_array(original), shape) if original is not None else None
    gt = resize_nearest(binary_mask(target_mask), shape)
    mask, method = extract_green_mask(rgb, orig, settings)
    return PerceptionScore(
        iou=mask_iou(mask, gt), method=method, predicted_px=int(mask.sum()), target_px=int(gt.sum())
    )
