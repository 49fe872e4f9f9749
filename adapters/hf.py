"""The transformers backend: `hf/<repo-id-or-local-path>?device=..&dtype=..&revision=..&mode=..`.

One class serves four kinds of checkpoint, told apart by config.json before any weights load:

- Janus / Janus-Pro and Emu3: understand, judge and generate (full unified models);
- chat VLMs (anything AutoModelForImageTextToText loads, with a chat template): understand, judge,
  and detect by asking for boxes as JSON;
- zero-shot detectors (OWL-ViT, OWLv2, Grounding DINO): detect;
- vision encoders (DINOv2, CLIP, SigLIP, ViT): embed.

Spec parameters (all optional):

- ``device`` (auto|cpu|cuda|cuda:N|mps) and ``dtype`` (auto|bf16|fp16|fp32): where and how to run;
  device does not change what a model computes beyond rounding and is kept out of the identity.
- ``revision``: hub branch, tag or commit (pinned to the commit found when the spec is read).
- ``mode`` (letter|likelihood): how multiple-choice questions are answered.
- ``temperature`` (default 0 = greedy) and ``max_new_tokens`` (a cap on reply length) for text.
- ``cfg`` (default 5) and ``image_temperature`` (default 1) for Janus and Emu3 image generation;
  ``image_side`` (default 720) for Emu3, whose image size is asked for in the prompt.
- ``threshold`` (default 0.1) for zero-shot detection scores.

Operational: ``batch_size`` (default 4 on CPU, 8 on a GPU), the most concurrent requests (answers,
judge replies, choices, grounding boxes, detections, embeddings, Janus images) joined into one model
call; ``concurrency`` defaults to twice that, so batches can form. Batching never changes a result:
prompts are left-padded under an attention mask, sampled text draws each row from its own seeded
generator (``hf_vlm.SeededSampling``), each Janus image samples from its own seeded generator,
detections batch only with the same labels and image size, and embeddings only from processors that
resize every image to one size. Emu3 images sample from torch's global generator inside its own
generate loop and run one per call.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Sequence
from functools import partial
from typing import Any, ClassVar, Literal

import anyio.to_thread
import numpy as np
from PIL import Image
from pydantic import NonNegativeFloat, PositiveInt

from umni.plugin import (
    DETECT,
    EMBED,
    GENERATE,
    JUDGE,
    UNDERSTAND,
    Backend,
    BackendParams,
    ChoiceReply,
    ConfigError,
    Detection,
    ImageReply,
    Part,
    RoleProvenance,
    Sampling,
    Spec,
    TextReply,
)

from . import hf_loading
from .batching import MicroBatcher
from .hf_loading import DETECTOR, EMU3, JANUS, ROLES_BY_KIND, VLM, LoadedModel, ModelSource

#: Output-affecting parameters, their defaults, and the kinds of model they apply to.
_SETTINGS: dict[str, tuple[Any, frozenset[str]]] = {
    "mode": ("letter", frozenset({JANUS, EMU3, VLM})),
    "temperature": (0.0, frozenset({JANUS, EMU3, VLM})),
    "max_new_tokens": (None, frozenset({JANUS, EMU3, VLM})),
    "cfg": (5.0, frozenset({JANUS, EMU3})),
    "image_temperature": (1.0, frozenset({JANUS, EMU3})),
    "image_side": (720, frozenset({EMU3})),
    "threshold": (0.1, frozenset({DETECTOR})),
}


class HFParams(BackendParams):
    """The spec parameters; None means "not given", so defaults (which depend on the model kind and the
    device) are filled in by the backend and written out in its identity."""

    operational: ClassVar[frozenset[str]] = BackendParams.operational | {"device"}

    device: str | None = None
    dtype: str | None = None
    revision: str | None = None
    mode: Literal["letter", "likelihood"] | None = None
    temperature: NonNegativeFloat | None = None
    max_new_tokens: PositiveInt | None = None
    cfg: NonNegativeFloat | None = None
    image_temperature: NonNegativeFloat | None = None
    image_side: PositiveInt | None = None
    threshold: NonNegativeFloat | None = None


class HFBackend(Backend):
    """A transformers model in this process, loaded once and shared by every node bound to it."""

    provider: ClassVar[str] = "hf"
    roles: ClassVar[frozenset[str]] = frozenset({UNDERSTAND, JUDGE, GENERATE, DETECT, EMBED})
    Params = HFParams

    def __init__(self, spec: Spec) -> None:
        super().__init__(spec)
        params: HFParams = self.params
        self.source: ModelSource = hf_loading.locate(spec.name, params.revision or None)
        self.kind: str = hf_loading.classify(self.source.config, spec.name)
        self.settings: dict[str, Any] = self._read_settings(params)
        cuda, mps, bf16 = hf_loading.probe_accelerators()
        self.device: str = hf_loading.choose_device(params.device, cuda=cuda, mps=mps)
        self.dtype: str = hf_loading.choose_dtype(params.dtype, self.device, bf16_supported=bf16)
        #: The most concurrent requests joined into one model call: more on a GPU, which a batch fills.
        self.batch_size: int = params.batch_size or (4 if self.device == "cpu" else 8)
        self._loaded: LoadedModel | None = None

    @property
    def concurrency(self) -> int:
        """Twice the batch size unless set: a batch forms while the previous one runs."""
        raw = self.spec.options.get("concurrency")
        return int(raw) if raw else 2 * self.batch_size

    def _read_settings(self, params: HFParams) -> dict[str, Any]:
        """Every output-affecting setting of this kind of model, defaults included."""
        settings: dict[str, Any] = {}
        for name, (default, kinds) in _SETTINGS.items():
            value = getattr(params, name)
            if value is not None and self.kind not in kinds:
                raise ConfigError(
                    f"{self.spec}: parameter {name} does not apply to this {self.kind} model", field=name
                )
            if self.kind in kinds:
                settings[name] = default if value is None else value
        return settings

    # ----------------------------------------------------------------------------------------------
    # backend protocol

    def fills(self) -> frozenset[str]:
        return ROLES_BY_KIND[self.kind]

    def identity(self) -> dict[str, Any]:
        """Repo id or folder, pinned revision, dtype and every effective output-affecting setting.

        Defaults are written out, so changing a default in a later version changes the identity
        instead of silently reusing old results.
        """
        return {
            "provider": self.provider,
            "name": self.source.name,
            "revision": self.source.revision,
            "dtype": self.dtype,
            "params": dict(self.settings),
        }

    def provenance(self, role: str) -> RoleProvenance:
        """The repo (or folder) and the commit its snapshot resolved to (a local folder: the hash of
        its files), dtype and device; text settings for text roles, Janus/Emu3's image settings for
        generate."""
        settings = self.settings
        if role == GENERATE and self.kind in (JANUS, EMU3):
            sampling = Sampling(temperature=settings.get("image_temperature"), guidance=settings.get("cfg"))
            seeds = "each image samples from a generator seeded by the node's seed"
        elif "temperature" in settings:
            sampling = Sampling(temperature=settings["temperature"], max_tokens=settings.get("max_new_tokens"))
            seeds = (
                "greedy decoding (temperature 0): the seed is not used" if not settings["temperature"]
                else "each reply samples from its own generator seeded by the node's seed"
            )
        else:
            sampling, seeds = None, "deterministic (no sampling)"
        return RoleProvenance(
            backend=self.provider,
            model=self.source.name,
            revision=self.source.revision,
            dtype=self.dtype,
            device=self.device,
            sampling=sampling,
            seed_policy=seeds,
        )

    async def start(self) -> None:
        if self._loaded is None:
            self._loaded = await anyio.to_thread.run_sync(
                hf_loading.load, self.source, self.kind, self.device, self.dtype
            )

    async def aclose(self) -> None:
        # The weights stay in the process-wide cache for other backends naming the same model.
        self._loaded = None

    # ----------------------------------------------------------------------------------------------
    # roles

    async def respond(self, parts: Sequence[Part], *, max_tokens: int = 512, seed: int = 0) -> TextReply:
        from .hf_vlm import TextRequest, generate_texts

        self._require(UNDERSTAND)
        limit = self.settings["max_new_tokens"]
        temperature = self.settings["temperature"]
        tokens = min(max_tokens, limit) if limit else max_tokens
        text, usage = await self._batched(
            partial(generate_texts, max_new_tokens=tokens, temperature=temperature),
            TextRequest(parts, "", seed), key=("respond", tokens, temperature, _image_sizes(parts)),
        )
        return TextReply(text=text, usage=usage)

    async def choose(self, parts: Sequence[Part], options: Sequence[str], *, seed: int = 0) -> ChoiceReply:
        from .hf_vlm import choose_by_letter, choose_by_likelihood

        self._require(UNDERSTAND)
        if not options:
            raise ConfigError("choose() needs at least one option")
        if len(options) > 26:
            raise ConfigError(f"choose() takes at most 26 options (letters A-Z), got {len(options)}")
        sizes = _image_sizes(parts)
        if self.settings["mode"] == "likelihood":
            return await self._batched(choose_by_likelihood, (parts, options), key=("likelihood", sizes))
        temperature = self.settings["temperature"]
        return await self._batched(
            partial(choose_by_letter, temperature=temperature), (parts, options, seed),
            key=("letter", temperature, sizes),
        )

    async def generate(self, parts: Sequence[Part], *, seed: int = 0) -> ImageReply:
        self._require(GENERATE)
        cfg, temperature = self.settings["cfg"], self.settings["image_temperature"]
        if self.kind == EMU3:
            from . import hf_emu3

            side = self.settings["image_side"]
            image, usage = await self._batched(
                partial(hf_emu3.generate_images, cfg=cfg, temperature=temperature, side=side), (parts, seed),
                key=("emu3-generate", cfg, temperature, side), sampled=temperature > 0,
            )
            return ImageReply(image=image, usage=usage)
        from .hf_janus import generate_images

        image, usage = await self._batched(
            partial(generate_images, cfg=cfg, temperature=temperature), (parts, seed),
            key=("generate", cfg, temperature, _image_sizes(parts)),
        )
        return ImageReply(image=image, usage=usage)

    async def detect(self, image: Image.Image, labels: Sequence[str]) -> list[Detection]:
        self._require(DETECT)
        if not labels:
            return []
        image = image.convert("RGB")
        if self.kind == VLM:
            from .hf_vlm import ground

            found: list[Detection] = await self._batched(ground, (image, tuple(labels)), key=("ground", image.size))
            return found
        from .hf_tools import detect_zero_shot

        threshold = self.settings["threshold"]
        return await self._batched(
            partial(detect_zero_shot, threshold=threshold), (image, tuple(labels)),
            key=("detect", threshold, tuple(labels), image.size),
        )

    async def embed(self, images: Sequence[Image.Image]) -> np.ndarray:
        from .hf_tools import embed_images

        self._require(EMBED)
        if not images:
            return np.zeros((0, 0), dtype=np.float32)
        return await self._batched(embed_images, tuple(images), key=("embed",))

    # ----------------------------------------------------------------------------------------------
    # helpers

    def _require(self, role: str) -> None:
        if role not in self.fills():
            raise ConfigError(
                f"{self.spec} is a {self.kind} model and fills {', '.join(sorted(self.fills()))}, not {role}"
            )

    async def _batched(
        self, run: Callable[[LoadedModel, list[Any]], Sequence[Any]], request: Any, *, key: Hashable,
        sampled: bool = False,
    ) -> Any:
        """Submit one request to the model's micro-batcher; ``run`` makes a batch of them in one call.

        ``key`` names the call and holds everything its batch shares (the settings, the input image
        sizes so pixel tensors stack), so two specs with different settings on one model never share a call.
        ``sampled`` marks work that draws from torch's global generator (Emu3 images), which runs one
        request per call so no result depends on its batch-mates.
        """
        await self.start()
        loaded = self._loaded
        assert loaded is not None
        batcher = _batcher_for(loaded)
        return await batcher.submit((run, request), key=key, limit=1 if sampled else self.batch_size)


_BATCHER_LOCK = threading.Lock()


def _batcher_for(loaded: LoadedModel) -> MicroBatcher:
    """The one batcher of a loaded model, shared by every backend bound to it."""
    with _BATCHER_LOCK:
        if loaded.batcher is None:

            def run_group(payloads: list[Any]) -> Sequence[Any]:
                run = payloads[0][0]
                with loaded.lock:
                    return run(loaded, [request for _, request in payloads])

            loaded.batcher = MicroBatcher(run_group)
        return loaded.batcher


def _image_sizes(parts: Sequence[Part]) -> tuple[tuple[int, int], ...]:
    return tuple(part.size for part in parts if isinstance(part, Image.Image))
