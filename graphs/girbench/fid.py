"""Visual Puzzle features and Fréchet distance through torchmetrics, as the official code computes them.

The official ``eval_VisualPuzzle.py`` feeds every (solution, output) pair to torchmetrics'
``FrechetInceptionDistance(feature=2048)``: each image is converted to RGB, resized to 512x512 with
PIL's default filter (bicubic), handed over as uint8, and torchmetrics' InceptionV3 (torch-fidelity's
TensorFlow-compatible port) resizes it to 299 and returns the 2048-d pool features. The distance
is torchmetrics' own (running sums in float64, unbiased covariances, trace of the square root via
eigenvalues), and the score is ``exp(-FID / 60)``.

umni computes the features per case (a cached compute node, so a re-run with the same images does
no work) and the distance over the whole set in the summary, by replaying the stored features into
the same torchmetrics metric. Nothing of the formula is written here.

**Weights.** ``weights=None`` loads torch-fidelity's standard InceptionV3 weights (downloaded once
into the torch hub cache); a path loads a local copy of that file. `write_random_weights` writes a
randomly initialised file of the same shape, for offline tests and dry runs.

**Import without torchvision.** torch-fidelity's package ``__init__`` imports every feature
extractor it ships, and the CLIP/VGG/DINOv2 ones import torchvision. The `girbench` extra installs a
torchvision built for the installed torch, and then nothing here changes anything; where torchvision
is absent or was built for another torch (it then fails to import), `_import_fid` registers the
torch-fidelity package without running its ``__init__`` before torchmetrics imports the InceptionV3
module, which needs only torch.
"""

from __future__ import annotations

import importlib.util
import sys
import tempfile
import threading
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

#: Images are resized to this square before the extractor sees them (the official step).
OFFICIAL_SIZE = 512
FEATURE_DIM = 2048

_lock = threading.Lock()
_extractors: dict[str | None, Any] = {}


def _import_fid() -> Any:
    """The torchmetrics FID module, imported so that torch-fidelity does not pull torchvision."""
    if "torchmetrics.image.fid" not in sys.modules and "torch_fidelity" not in sys.modules:
        spec = importlib.util.find_spec("torch_fidelity")
        if spec is not None and spec.submodule_search_locations:
            try:
                import torchvision  # noqa: F401
            except Exception:  # absent, or unloadable beside this torch
                package = types.ModuleType("torch_fidelity")
                package.__path__ = list(spec.submodule_search_locations)
                package.__spec__ = spec
                sys.modules["torch_fidelity"] = package
    import torchmetrics.image.fid as fid

    return fid


def _require_torch_fidelity() -> None:
    if "torch_fidelity" not in sys.modules and importlib.util.find_spec("torch_fidelity") is None:
        raise ModuleNotFoundError(
            "torch-fidelity (torchmetrics' InceptionV3) is not installed: pip install 'umni[girbench]' "
            "(with the torchvision built for your torch, e.g. torch==2.14.1 torchvision==0.29.1)",
            name="torch_fidelity",
        )


def _extractor(weights: str | None) -> Any:
    """The InceptionV3, loaded once per process; a load that failed is not retried for every case."""
    with _lock:
        if weights not in _extractors:
            _require_torch_fidelity()
            fid = _import_fid()
            try:
                _extractors[weights] = fid.NoTrainInceptionV3(
                    name="inception-v3-compat", features_list=[str(FEATURE_DIM)], feature_extractor_weights_path=weights
                )
            except (OSError, RuntimeError, ValueError) as exc:  # no network, a missing or damaged file
                source = weights or "the standard download"
                _extractors[weights] = RuntimeError(
                    f"the InceptionV3 weights ({source}) could not be loaded ({exc}); "
                    "pass --option fid_weights=<local .pth file> or --option features=embed"
                )
        found = _extractors[weights]
    if isinstance(found, Exception):
        raise found
    return found


def official_input(image: Image.Image) -> np.ndarray:
    """The uint8 (3, 512, 512) array the official code hands to the metric."""
    resized = image.convert("RGB").resize((OFFICIAL_SIZE, OFFICIAL_SIZE))
    return np.asarray(resized, dtype=np.uint8).transpose(2, 0, 1)


def inception_features(images: Sequence[Image.Image], *, weights: str | None = None) -> np.ndarray:
    """2048-d InceptionV3 pool features, one row per image, as torchmetrics computes them (float32)."""
    import torch

    batch = torch.from_numpy(np.stack([official_input(im) for im in images]))
    model = _extractor(weights)
    with _lock, torch.inference_mode():
        return model(batch).to(torch.float32).numpy()


class _StoredFeatures:
    """Builds a pass-through torch module: the metric's "extractor" for features computed earlier."""

    @staticmethod
    def module(dim: int) -> Any:
        import torch

        class PassThrough(torch.nn.Module):
            num_features = dim

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                return x

        return PassThrough()


def fid_from_features(outputs: np.ndarray, solutions: np.ndarray) -> float:
    """torchmetrics' FID between stored solution ("real") and output ("fake") features.

    Pairs are fed in the given order, one pair per update, as the official loop does.
    """
    import torch

    outputs = np.asarray(outputs, dtype=np.float32)
    solutions = np.asarray(solutions, dtype=np.float32)
    if outputs.ndim != 2 or outputs.shape != solutions.shape:
        raise ValueError(f"expected two feature sets of the same shape (n, d), got {outputs.shape} and {solutions.shape}")
    if outputs.shape[0] < 2:
        raise ValueError("the Fréchet distance needs features of at least 2 images per side")
    fid = _import_fid()
    metric = fid.FrechetInceptionDistance(feature=_StoredFeatures.module(outputs.shape[1]))
    for out, sol in zip(outputs, solutions):
        metric.update(torch.from_numpy(sol[None, :]), real=True)
        metric.update(torch.from_numpy(out[None, :]), real=False)
    return float(metric.compute())


def write_random_weights(path: str | Path, *, seed: int = 0) -> Path:
    """Write a randomly initialised InceptionV3 state dict in torch-fidelity's format to `path`.

    For tests and dry runs only: the features are meaningless, but every step of the official
    pipeline runs on them.
    """
    import torch

    _require_torch_fidelity()
    fid = _import_fid()

    class _Unloaded(fid.NoTrainInceptionV3):  # type: ignore[name-defined]
        def load_state_dict(self, state_dict: Any, strict: bool = True, assign: bool = False) -> Any:
            return None  # keep the random initialisation

    torch.manual_seed(seed)
    with tempfile.TemporaryDirectory() as tmp:
        empty = Path(tmp) / "empty.pth"
        torch.save({}, empty)
        model = _Unloaded(name="inception-v3-compat", features_list=[str(FEATURE_DIM)], feature_extractor_weights_path=str(empty))
    # He initialisation keeps the activations' scale through the network's ~90 convolutions (the
    # default initialisation shrinks them to ~1e-8, which would make every distance ~0)
    for module in model.modules():
        if isinstance(module, torch.nn.Conv2d):
            torch.nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
    path = Path(path)
    torch.save(model.state_dict(), path)
    return path
