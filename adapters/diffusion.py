"""The ``diffusers`` backend: text-to-image and image-editing pipelines run in this process.

Spec: ``diffusers/<hub repo or local directory>?key=value&...``, for example
``diffusers/black-forest-labs/FLUX.1-dev?steps=28`` or ``diffusers//models/my-sd?dtype=fp16``.

Edits come out at the input image's size (rounded down to what the model's latent grid allows)
unless ``width`` and ``height`` say otherwise. FLUX Kontext would otherwise redraw every edit at a
square megapixel; it still sees its reference image at the megapixel size it was trained on.
Where the model cannot draw at exactly that size (a latent grid in steps of 16 pixels, or a class
such as LongCat-Image-Edit that picks its own size), the result is resized back to the input's size
and the node gets a ``resized:`` note saying what the model returned.

Which roles a model fills follows from the pipeline class named in its ``model_index.json``:
text-to-image classes fill ``generate``; image-conditioned classes (InstructPix2Pix, Qwen-Image-Edit,
FLUX Fill with a white mask over the whole image) fill ``edit``; FLUX Kontext and FLUX.2 fill both.
FLUX Fill needs ``strength`` below 1: a whole-image mask hides the input from the model, so at the
default strength of 1 (pure noise to start from) every "edit" would be a fresh drawing that never
saw the input. Below 1 the run starts from the input's noised latents, as in image-to-image.
The class is read in the constructor (a small file, from disk or the hub cache) so a wrong model
fails before any work; weights load once per process in ``start()`` and are shared by every
backend instance naming the same model, revision, dtype and device.

Parameters that change outputs (and so the backend identity): ``steps``, ``guidance``,
``image_guidance`` (InstructPix2Pix only), ``strength`` (FLUX Fill only), ``width``, ``height``,
``revision``, ``device``, ``dtype``, ``prompt_rewrite`` (LongCat-Image only). Operational ones: ``batch_size`` (images per pipeline call;
default 4 on CUDA, 1 elsewhere), ``concurrency`` (requests the engine may have in flight; default twice the batch size
so the next batch fills while one runs), ``timeout``, ``max_retries``.

LongCat-Image rewrites every prompt with its own text model before drawing
(``enable_prompt_rewrite``, on by default in diffusers). umni keeps the model's default, so the
model draws what its authors' pipeline draws, and writes ``prompt_rewrite`` into the identity
either way; ``prompt_rewrite=false`` makes it draw the benchmark's prompt as given, as every other
model here does. With the rewrite on, LongCat-Image images are made one per call.

Every image gets its own seeded CPU ``torch.Generator``, so an image depends on its prompt, seed and
parameters only, never on which other requests shared its batch.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from PIL import Image
from pydantic import Field, PositiveInt, field_validator

from umni.plugin import (
    EDIT,
    GENERATE,
    Backend,
    BackendError,
    BackendParams,
    ConfigError,
    DegenerateOutput,
    ImageReply,
    Part,
    RoleProvenance,
    Sampling,
    Spec,
    Usage,
    file_sha256,
)

from .batching import MicroBatcher
from .local_models import DTYPE_ALIASES, ModelCache, choose_device, choose_dtype, probe_accelerators

# --------------------------------------------------------------------------------------------------
# What each pipeline class can do


@dataclass(frozen=True)
class PipelineKind:
    """How umni drives one diffusers pipeline class.

    ``edit_input`` says how an edit passes its image(s): ``instruct`` (one image to change, as in
    InstructPix2Pix), ``reference`` (the image conditions the result, as in Kontext), ``multi``
    (a list of reference images per prompt), ``fill`` (inpainting with a mask over everything).
    ``batch_edits`` is True only where batched edits are known to work and proven equal to single
    ones in tests; other edits run one per call. Of the ``multi`` classes only OmniGen takes a list of
    images per prompt; FLUX.2 and Qwen-Image-Edit-Plus take one image list for a whole call, so a
    batch would condition every prompt on every request's images.
    ``guidance_arg`` is the call argument ``guidance`` maps to; ``negative_prompt`` is passed where
    the model's classifier-free guidance only runs when one is given (Qwen-Image).
    ``area_arg`` names the argument that really sets the output area where the class rescales
    ``width`` x ``height`` to a fixed pixel budget and keeps only their ratio (Kontext's ``max_area``).
    ``needs_strength`` marks classes that ignore the input image unless ``strength`` is below 1.
    ``image_arg`` is the call argument the edit image(s) go to (OmniGen's ``input_images``);
    ``image_list`` passes a list even for one image; ``image_tag`` is the text the prompt must hold
    for each image (``{n}`` counts from 1) where the model reads images only through such tags.
    ``rewrite_arg`` names the switch of a class that rewrites every prompt with its own text model
    before drawing (LongCat-Image's ``enable_prompt_rewrite``), ``rewrite_default`` its default.
    """

    roles: frozenset[str]
    edit_input: str | None = None
    batch_edits: bool = False
    guidance_arg: str = "guidance_scale"
    image_guidance: bool = False
    negative_prompt: str | None = None
    auto_text2image: bool = False
    area_arg: str | None = None
    needs_strength: bool = False
    image_arg: str = "image"
    image_list: bool = False
    image_tag: str | None = None
    rewrite_arg: str | None = None
    rewrite_default: bool = False


_T2I = PipelineKind(roles=frozenset({GENERATE}), auto_text2image=True)
_QWEN_T2I = PipelineKind(
    roles=frozenset({GENERATE}), auto_text2image=True, guidance_arg="true_cfg_scale", negative_prompt=" "
)

PIPELINE_KINDS: dict[str, PipelineKind] = {
    **{
        name: _T2I
        for name in (
            "StableDiffusionPipeline",
            "StableDiffusionXLPipeline",
            "StableDiffusion3Pipeline",
            "LatentConsistencyModelPipeline",
            "FluxPipeline",
            "PixArtAlphaPipeline",
            "PixArtSigmaPipeline",
            "SanaPipeline",
            "AuraFlowPipeline",
            "LuminaPipeline",
            "Lumina2Pipeline",
            "HunyuanDiTPipeline",
            "CogView4Pipeline",
            "ChromaPipeline",
            "ZImagePipeline",
            "HiDreamImagePipeline",
            "Kandinsky5T2IPipeline",
            "PRXPipeline",
            "OvisImagePipeline",
        )
    },
    "QwenImagePipeline": _QWEN_T2I,
    "StableDiffusionInstructPix2PixPipeline": PipelineKind(
        roles=frozenset({EDIT}), edit_input="instruct", batch_edits=True, image_guidance=True
    ),
    "StableDiffusionXLInstructPix2PixPipeline": PipelineKind(
        roles=frozenset({EDIT}), edit_input="instruct", batch_edits=True, image_guidance=True
    ),
    "FluxKontextPipeline": PipelineKind(
        roles=frozenset({GENERATE, EDIT}), edit_input="reference", batch_edits=True, area_arg="max_area"
    ),
    "Flux2Pipeline": PipelineKind(roles=frozenset({GENERATE, EDIT}), edit_input="multi"),
    "Flux2KleinPipeline": PipelineKind(roles=frozenset({GENERATE, EDIT}), edit_input="multi"),
    "QwenImageEditPipeline": PipelineKind(
        roles=frozenset({EDIT}), edit_input="reference", guidance_arg="true_cfg_scale", negative_prompt=" "
    ),
    "QwenImageEditPlusPipeline": PipelineKind(
        roles=frozenset({EDIT}), edit_input="multi", guidance_arg="true_cfg_scale", negative_prompt=" "
    ),
    "FluxFillPipeline": PipelineKind(
        roles=frozenset({EDIT}), edit_input="fill", batch_edits=True, needs_strength=True
    ),
    "OmniGenPipeline": PipelineKind(
        roles=frozenset({GENERATE, EDIT}),
        edit_input="multi",
        batch_edits=True,
        image_arg="input_images",
        image_list=True,
        image_tag="<img><|image_{n}|></img>",
    ),
    "HunyuanImagePipeline": PipelineKind(
        roles=frozenset({GENERATE}), guidance_arg="distilled_guidance_scale"
    ),
    "LongCatImagePipeline": PipelineKind(
        roles=frozenset({GENERATE}), rewrite_arg="enable_prompt_rewrite", rewrite_default=True
    ),
    "LongCatImageEditPipeline": PipelineKind(roles=frozenset({EDIT}), edit_input="reference"),
    "GlmImagePipeline": PipelineKind(roles=frozenset({GENERATE, EDIT}), edit_input="multi"),
    "QwenImage21Pipeline": PipelineKind(
        roles=frozenset({GENERATE, EDIT}), edit_input="multi", guidance_arg="true_cfg_scale", negative_prompt=" "
    ),
}

#: Classes in diffusers' text-to-image auto mapping that need inputs umni cannot give (a control image).
_NEEDS_EXTRA_INPUTS = ("ControlNet", "Control", "Inpaint", "Omni")


def pipeline_kind(class_name: str) -> PipelineKind:
    """The kind of a pipeline class, or ConfigError listing the classes that work.

    Classes outside the table are looked up in diffusers' own text-to-image auto mapping (a slow
    import, paid only for such classes), so new text-to-image families work without a table entry.
    """
    if class_name in PIPELINE_KINDS:
        return PIPELINE_KINDS[class_name]
    if not any(marker in class_name for marker in _NEEDS_EXTRA_INPUTS) and class_name in _auto_text2image_names():
        return _T2I
    raise ConfigError(
        f"diffusers pipeline class '{class_name}' cannot serve generate or edit; supported classes: "
        + ", ".join(sorted(PIPELINE_KINDS))
        + " (and other text-to-image classes of AutoPipelineForText2Image)"
    )


def _auto_text2image_names() -> set[str]:
    try:
        from diffusers.pipelines.auto_pipeline import AUTO_TEXT2IMAGE_PIPELINES_MAPPING
    except ImportError:  # pragma: no cover - very old or broken diffusers
        return set()
    return {cls.__name__ for cls in AUTO_TEXT2IMAGE_PIPELINES_MAPPING.values()}


# --------------------------------------------------------------------------------------------------
# Spec parameters


class DiffusersParams(BackendParams):
    """The ``diffusers/`` spec's parameters; all but the inherited engine ones change outputs.

    Checks that need the pipeline class (``image_guidance`` only for InstructPix2Pix, ``strength``
    only for FLUX Fill, Kontext's width and height together) are made by the backend, which knows it.
    """

    steps: PositiveInt | None = Field(None, description="denoising steps (the pipeline's default if unset)")
    guidance: float | None = Field(None, allow_inf_nan=False, description="classifier-free guidance scale")
    image_guidance: float | None = Field(None, allow_inf_nan=False, description="InstructPix2Pix image guidance")
    strength: float | None = Field(None, gt=0, le=1, description="FLUX Fill: how far from the input to start")
    width: PositiveInt | None = Field(None, multiple_of=8, description="output width (edits: the input's)")
    height: PositiveInt | None = Field(None, multiple_of=8, description="output height (edits: the input's)")
    revision: str | None = Field(None, description="hub branch, tag or commit")
    device: str | None = Field(None, description="cpu, cuda, cuda:N or mps")
    dtype: str | None = Field(None, description="bf16, fp16 or fp32")
    prompt_rewrite: bool | None = Field(
        None, description="LongCat-Image: let the pipeline rewrite each prompt with its text model first"
    )

    @field_validator("dtype")
    @classmethod
    def _known_dtype(cls, value: str | None) -> str | None:
        if value is not None and value.lower() not in DTYPE_ALIASES:
            raise ValueError("must be one of bf16, fp16, fp32")
        return value


def _resolve_device(spec: Spec) -> str:
    cuda, mps, _ = probe_accelerators()
    try:
        return choose_device(spec.options.get("device"), cuda=cuda, mps=mps)
    except ConfigError as exc:
        raise ConfigError(f"spec '{spec}': {exc}") from None


def _resolve_dtype(spec: Spec, device: str) -> str:
    _, _, bf16 = probe_accelerators()
    try:
        return choose_dtype(spec.options.get("dtype"), device, bf16_supported=bf16)
    except ConfigError as exc:
        raise ConfigError(f"spec '{spec}': {exc}") from None


# --------------------------------------------------------------------------------------------------
# Locating the model and fingerprinting it


@dataclass(frozen=True)
class ModelSource:
    """Where weights come from: a local directory, or a hub repo pinned to a commit."""

    location: str  # resolved local path or repo id
    is_local: bool
    class_name: str
    fingerprint: str  # local: hash of configs and weight files; hub: commit hash (or revision)
    revision: str | None  # what to pass to from_pretrained


def _looks_like_path(name: str) -> bool:
    return name.startswith(("/", "./", "../", "~")) or name.count("/") != 1


def locate_model(spec: Spec) -> ModelSource:
    """Find the model a spec names and read its pipeline class, cheaply (no weights)."""
    name = spec.name
    revision = spec.options.get("revision")
    path = Path(name).expanduser()
    if path.is_dir() or _looks_like_path(name):
        if not path.is_dir():
            raise ConfigError(f"spec '{spec}': local diffusers model directory '{path}' does not exist")
        if revision is not None:
            raise ConfigError(f"spec '{spec}': revision applies to hub repos, not to the local directory '{path}'")
        index_file = path.resolve() / "model_index.json"
        class_name = _read_class_name(index_file, spec)
        return ModelSource(str(path.resolve()), True, class_name, _fingerprint_directory(path.resolve()), None)
    index_file, commit = _hub_model_index(spec, name, revision)
    pinned = commit or revision
    return ModelSource(name, False, _read_class_name(index_file, spec), pinned or "main", pinned)


def _read_class_name(index_file: Path, spec: Spec) -> str:
    if not index_file.is_file():
        raise ConfigError(
            f"spec '{spec}': '{index_file}' not found; a diffusers model directory needs a model_index.json "
            "(written by DiffusionPipeline.save_pretrained)"
        )
    try:
        class_name = json.loads(index_file.read_text(encoding="utf-8"))["_class_name"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"'{index_file}' is not a diffusers model index with a _class_name ({exc})") from None
    return str(class_name)


def _hub_model_index(spec: Spec, repo: str, revision: str | None) -> tuple[Path, str | None]:
    """Fetch model_index.json (from the local hub cache when present) and the commit it came from."""
    try:
        from huggingface_hub import hf_hub_download

        downloaded = Path(hf_hub_download(repo, "model_index.json", revision=revision))
    except Exception as exc:  # offline, unknown repo, gated repo, ...
        raise ConfigError(
            f"spec '{spec}': cannot read model_index.json of hub repo '{repo}'"
            f"{' at revision ' + revision if revision else ''}: {type(exc).__name__}: {exc}"
        ) from None
    parent = downloaded.parent
    commit = parent.name if parent.parent.name == "snapshots" else None
    return downloaded, commit


_CONFIG_SUFFIXES = (".json", ".txt", ".model", ".yaml")


def _fingerprint_directory(root: Path) -> str:
    """A hash of every file's name and content (weights included).

    Weight files are hashed by umni.filehash, which streams each once and remembers the result by
    size, mtime_ns and inode, so a re-run does not read gigabytes again while weights overwritten in
    place (same size) still change the identity.
    """
    digest = hashlib.sha256()
    for file in sorted(p for p in root.rglob("*") if p.is_file()):
        relative = file.relative_to(root)
        if any(part.startswith(".") for part in relative.parts):
            continue
        digest.update(str(relative.as_posix()).encode() + b"\0")
        digest.update(file_sha256(file).encode())
        digest.update(b"\n")
    return digest.hexdigest()


# --------------------------------------------------------------------------------------------------
# Loaded pipelines, shared per process


@dataclass(frozen=True)
class _Request:
    """One image to make: what goes to the pipeline for it."""

    prompt: str
    images: tuple[Image.Image, ...]
    seed: int


class LoadedPipeline:
    """A pipeline in memory with the batcher that feeds it; one per model/revision/dtype/device."""

    def __init__(self, pipe: Any, kind: PipelineKind, device: str) -> None:
        self.pipe = pipe
        self.kind = kind
        self.device = device
        self.class_name = type(pipe).__name__
        self.call_args = frozenset(inspect.signature(type(pipe).__call__).parameters)
        self.batcher = MicroBatcher(self._run_group)

    def truncation_notes(self, prompt: str) -> tuple[str, ...]:
        """A ``prompt_truncated`` note for each CLIP-style tokenizer of the pipeline that cuts the prompt
        (77 tokens for Stable Diffusion's text encoders); diffusers only logs that on the console."""
        notes = []
        for name in ("tokenizer", "tokenizer_2"):
            tokenizer = getattr(self.pipe, name, None)
            limit = getattr(tokenizer, "model_max_length", None)
            if tokenizer is None or not isinstance(limit, int) or limit > 4096:
                continue  # absent, or a tokenizer without a real limit (T5's is huge or unset)
            length = len(tokenizer(prompt, truncation=False)["input_ids"])
            if length > limit:
                notes.append(f"prompt_truncated: {name} keeps {limit} of the prompt's {length} tokens")
        return tuple(notes)

    def run(self, requests: list[_Request], *, edit: bool, call: dict[str, Any]) -> list[Any]:
        """One pipeline call for ``requests`` (all compatible); one image or exception per request."""
        import torch

        generators = [torch.Generator("cpu").manual_seed(request.seed) for request in requests]
        kwargs: dict[str, Any] = {**call, "generator": generators, "output_type": "pil"}
        prompts = [self.tagged_prompt(request.prompt, len(request.images) if edit else 0) for request in requests]
        kwargs["prompt"] = prompts if len(prompts) > 1 else prompts[0]
        if self.kind.negative_prompt is not None and "negative_prompt" in self.call_args:
            negative = self.kind.negative_prompt
            kwargs["negative_prompt"] = [negative] * len(prompts) if len(prompts) > 1 else negative
        if edit:
            kwargs.update(self._edit_inputs(requests, call))
        try:
            output = self.pipe(**kwargs)
        except Exception as exc:
            raise self._translate(exc, len(requests)) from exc
        images = list(output.images)
        if len(images) != len(requests):
            raise BackendError(
                f"{self.class_name} returned {len(images)} images for {len(requests)} prompts", retryable=False
            )
        flagged = getattr(output, "nsfw_content_detected", None) or [False] * len(images)
        results: list[Any] = []
        for image, blanked in zip(images, flagged):
            if blanked:
                results.append(DegenerateOutput(f"{self.class_name}: the safety checker blanked this image"))
            else:
                results.append(image.convert("RGB"))
        return results

    def _edit_inputs(self, requests: list[_Request], call: dict[str, Any]) -> dict[str, Any]:
        style = self.kind.edit_input
        arg = self.kind.image_arg
        firsts = [request.images[0] for request in requests]
        if style == "multi" and self.kind.batch_edits and len(requests) > 1:  # a list per prompt (OmniGen)
            inputs: dict[str, Any] = {arg: [list(request.images) for request in requests]}
        elif style == "multi":  # one request: its images condition the one result
            (request,) = requests
            images = list(request.images)
            inputs = {arg: images if len(images) > 1 or self.kind.image_list else images[0]}
        else:
            inputs = {arg: firsts if len(firsts) > 1 else firsts[0]}
        if style == "fill":
            masks = [Image.new("L", image.size, 255) for image in firsts]
            inputs["mask_image"] = masks if len(masks) > 1 else masks[0]
        if {"width", "height"} <= self.call_args and style != "instruct":
            # Without these the pipeline draws at its own default size (a square megapixel for
            # Kontext and Qwen-Image-Edit), not the input's.
            wanted = call.get("width", firsts[0].width), call.get("height", firsts[0].height)
            width, height = self._latent_grid_size(*wanted)
            inputs["width"], inputs["height"] = width, height
            if self.kind.area_arg is not None:
                inputs[self.kind.area_arg] = width * height
        return inputs

    def tagged_prompt(self, prompt: str, images: int) -> str:
        """The prompt with one image tag per input image, for models that read images only through tags."""
        tag = self.kind.image_tag
        if tag is None or not images:
            return prompt
        tags = [tag.format(n=n) for n in range(1, images + 1)]
        missing = [t for t in tags if t not in prompt]
        return " ".join([*missing, prompt]) if missing else prompt

    def _latent_grid_size(self, width: int, height: int) -> tuple[int, int]:
        """The largest size at most ``width`` x ``height`` that the packed latent grid can hold."""
        step = 2 * int(getattr(self.pipe, "vae_scale_factor", 8))  # latents are packed in 2x2 patches
        return max(step, width // step * step), max(step, height // step * step)

    def _translate(self, exc: Exception, batch: int) -> BackendError:
        if _is_out_of_memory(exc):
            if batch > 1:  # later batches stay smaller, so the retry has a chance
                self.batcher.cap = max(1, batch // 2)
            _free_accelerator_memory()
            return BackendError(
                f"{self.class_name} ran out of memory on a batch of {batch} on {self.device}: {exc}", retryable=True
            )
        return BackendError(f"{self.class_name} failed: {type(exc).__name__}: {exc}", retryable=False)

    def _run_group(self, payloads: list[tuple[_Request, bool, dict[str, Any]]]) -> list[Any]:
        _, edit, call = payloads[0]
        return self.run([request for request, _, _ in payloads], edit=edit, call=call)


def _is_out_of_memory(exc: BaseException) -> bool:
    import torch

    oom_type = getattr(torch, "OutOfMemoryError", None) or getattr(torch.cuda, "OutOfMemoryError", None)
    if oom_type is not None and isinstance(exc, oom_type):
        return True
    return isinstance(exc, RuntimeError) and "out of memory" in str(exc).lower()


def _free_accelerator_memory() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.empty_cache()


_PIPELINES: ModelCache[LoadedPipeline] = ModelCache()


def loaded_pipeline(source: ModelSource, kind: PipelineKind, dtype: str, device: str) -> LoadedPipeline:
    """The shared pipeline for this model, loading it on first use (blocking; call from a thread)."""
    key = (source.location, source.revision, dtype, device)
    return _PIPELINES.get(key, lambda: LoadedPipeline(_load(source, kind, dtype, device), kind, device))


def clear_pipeline_cache() -> None:
    """Forget loaded pipelines (frees their memory once no backend holds them)."""
    _PIPELINES.clear()
    _free_accelerator_memory()


def _load(source: ModelSource, kind: PipelineKind, dtype: str, device: str) -> Any:
    import diffusers
    import torch

    loader = diffusers.AutoPipelineForText2Image if kind.auto_text2image else diffusers.DiffusionPipeline
    dtype_arg = _dtype_keyword()
    try:
        pipe = loader.from_pretrained(source.location, revision=source.revision, **{dtype_arg: getattr(torch, dtype)})
    except Exception as exc:
        raise ConfigError(f"cannot load diffusers pipeline '{source.location}': {type(exc).__name__}: {exc}") from exc
    pipe = pipe.to(device)
    pipe.set_progress_bar_config(disable=True)
    return pipe


def _dtype_keyword() -> str:
    """``dtype`` where diffusers has renamed ``torch_dtype`` to it, else ``torch_dtype``."""
    from diffusers.utils import deprecation_utils

    return "dtype" if hasattr(deprecation_utils, "_TORCH_DTYPE_DEPRECATION_MESSAGE") else "torch_dtype"


# --------------------------------------------------------------------------------------------------
# The backend


class DiffusersBackend(Backend):
    """Generate and edit images with a diffusers pipeline, micro-batching concurrent requests."""

    provider: ClassVar[str] = "diffusers"
    roles: ClassVar[frozenset[str]] = frozenset({GENERATE, EDIT})
    Params = DiffusersParams

    def __init__(self, spec: Spec) -> None:
        super().__init__(spec)
        params: DiffusersParams = self.params
        self.source = locate_model(spec)
        self.kind = pipeline_kind(self.source.class_name)
        self.steps = params.steps
        self.width = params.width
        self.height = params.height
        if self.kind.area_arg is not None and (self.width is None) != (self.height is None):
            raise ConfigError(
                f"spec '{spec}': {self.source.class_name} needs width and height together "
                "(it keeps their ratio and area, so one alone says neither)"
            )
        self.guidance = params.guidance
        self.image_guidance = params.image_guidance
        if self.image_guidance is not None and not self.kind.image_guidance:
            raise ConfigError(
                f"spec '{spec}': image_guidance applies to InstructPix2Pix pipelines, not {self.source.class_name}"
            )
        self.strength = params.strength
        if self.strength is not None and not self.kind.needs_strength:
            raise ConfigError(f"spec '{spec}': strength applies to FLUX Fill pipelines, not {self.source.class_name}")
        if params.prompt_rewrite is not None and self.kind.rewrite_arg is None:
            raise ConfigError(
                f"spec '{spec}': prompt_rewrite applies to pipelines that rewrite prompts (LongCatImagePipeline), "
                f"not {self.source.class_name}"
            )
        #: Whether the pipeline rewrites prompts before drawing: its own default unless the spec says;
        #: None for classes that never rewrite. Written into the identity either way.
        self.prompt_rewrite: bool | None = (
            None if self.kind.rewrite_arg is None
            else self.kind.rewrite_default if params.prompt_rewrite is None else params.prompt_rewrite
        )
        self.device = _resolve_device(spec)
        self.dtype = _resolve_dtype(spec, self.device)
        default_batch = 4 if self.device.startswith("cuda") else 1
        self.batch_size = params.batch_size or default_batch
        self._pipeline: LoadedPipeline | None = None

    # -- lifecycle ---------------------------------------------------------------------------------

    async def start(self) -> None:
        import anyio.to_thread

        if self._pipeline is not None:
            return
        if self.kind.needs_strength and (self.strength is None or self.strength >= 1):
            # Checked here, not in the constructor, so the roles of such a model can still be read.
            raise ConfigError(
                f"spec '{self.spec}': {self.source.class_name} edits by masking the whole image, which hides "
                "the image from the model; at strength 1 every edit is a new drawing that ignores the input. "
                "Set strength below 1 (e.g. strength=0.85) so it starts from the noised input, or use an "
                "instruction editor (FluxKontextPipeline, QwenImageEditPipeline)"
            )
        pipeline = await anyio.to_thread.run_sync(loaded_pipeline, self.source, self.kind, self.dtype, self.device)
        for name in self._call_params():
            if name not in pipeline.call_args:
                raise ConfigError(f"spec '{self.spec}': {pipeline.class_name} takes no '{name}' argument")
        self._pipeline = pipeline

    def fills(self) -> frozenset[str]:
        return self.kind.roles

    @property
    def concurrency(self) -> int:
        return self.params.concurrency or 2 * self.batch_size

    @property
    def pipeline(self) -> LoadedPipeline:
        if self._pipeline is None:
            raise RuntimeError(f"backend {self.spec} used before start()")
        return self._pipeline

    def identity(self) -> dict[str, Any]:
        params: dict[str, Any] = {k: v for k, v in self.spec.params if k not in self.operational_params and k != "dtype"}
        if self.prompt_rewrite is not None:  # the default too: the drawn prompt is not the benchmark's
            params["prompt_rewrite"] = self.prompt_rewrite
        return {
            "provider": self.provider,
            "model": self.source.location,
            "model_version": self.source.fingerprint,
            "pipeline": self.source.class_name,
            "dtype": self.dtype,
            "params": params,
        }

    def provenance(self, role: str) -> RoleProvenance:
        """The model and its pinned commit (a local folder: the hash of its files), the pipeline's
        dtype and device, and the steps and guidance it draws with (None: the pipeline's default)."""
        return RoleProvenance(
            backend=self.provider,
            model=self.source.location,
            revision=self.source.fingerprint,
            dtype=self.dtype,
            device=self.device,
            sampling=Sampling(steps=self.steps, guidance=self.guidance),
            seed_policy="each image draws from a CPU torch generator seeded by the node's seed",
        )

    # -- roles -------------------------------------------------------------------------------------

    async def generate(self, parts: Sequence[Part], *, seed: int = 0) -> ImageReply:
        """Draw one image; the text parts, joined by spaces, are the prompt.

        Image parts condition the result only for classes that also edit (FLUX Kontext, FLUX.2);
        plain text-to-image pipelines cannot take them, and they are ignored there.
        """
        prompt = " ".join(part.strip() for part in parts if isinstance(part, str) and part.strip())
        images = tuple(part for part in parts if isinstance(part, Image.Image))
        if images and EDIT in self.kind.roles:
            return await self._submit(prompt, images, seed, edit=True)
        reply = await self._submit(prompt, (), seed, edit=False)
        if images:  # said on the node and counted in the summary, not only visible as images_in: 0
            note = f"images_ignored: {len(images)} image(s) in the prompt not given to {self.source.class_name}, which draws from text only"
            reply.notes = (*reply.notes, note)
        return reply

    async def edit(self, images: Sequence[Image.Image], instruction: str, *, seed: int = 0) -> ImageReply:
        """Change the first image as the instruction says (all images for multi-image pipelines)."""
        if EDIT not in self.kind.roles:
            raise ConfigError(f"{self.source.class_name} ('{self.spec}') cannot edit; bind edit to another backend")
        if not images:
            raise BackendError("edit called without an input image", retryable=False)
        used = tuple(images) if self.kind.edit_input == "multi" else (images[0],)
        return await self._submit(instruction, used, seed, edit=True)

    async def _submit(self, prompt: str, images: tuple[Image.Image, ...], seed: int, *, edit: bool) -> ImageReply:
        if not edit and GENERATE not in self.kind.roles:
            raise ConfigError(
                f"{self.source.class_name} ('{self.spec}') cannot generate; bind generate to another backend"
            )
        images = tuple(image.convert("RGB") for image in images)
        call = self._call_params()
        # A rewriting pipeline pads the prompts of a batch through its text model's generate, so a
        # rewritten prompt (and the image) could depend on its batch-mates: such calls run alone.
        batchable = (not edit or self.kind.batch_edits) and not self.prompt_rewrite
        key = (edit, tuple(sorted(call.items())), tuple(image.size for image in images), self.batch_size)
        request = _Request(prompt=prompt, images=images, seed=int(seed))
        image = await self.pipeline.batcher.submit(
            (request, edit, call), key=key, limit=self.batch_size if batchable else 1
        )
        usage = Usage(calls=1, images_in=len(images), images_out=1)
        notes = self.pipeline.truncation_notes(prompt)
        if edit and self.width is None and self.height is None and image.size != images[0].size:
            # docs/models.md promises edits at the input's size; a latent grid that cannot hold it, or a
            # class with a fixed output size, made another, so it is resized back and said so.
            made = image.size
            image = image.resize(images[0].size, Image.Resampling.LANCZOS)
            note = (
                f"resized: {self.source.class_name} returned {made[0]}x{made[1]}; "
                f"resized to the input's {images[0].width}x{images[0].height}"
            )
            notes = (*notes, note)
        return ImageReply(image=image, usage=usage, notes=notes)

    def _call_params(self) -> dict[str, Any]:
        call: dict[str, Any] = {}
        if self.steps is not None:
            call["num_inference_steps"] = self.steps
        if self.guidance is not None:
            call[self.kind.guidance_arg] = self.guidance
        if self.image_guidance is not None:
            call["image_guidance_scale"] = self.image_guidance
        if self.strength is not None:
            call["strength"] = self.strength
        if self.width is not None:
            call["width"] = self.width
        if self.height is not None:
            call["height"] = self.height
        if self.kind.area_arg is not None and self.width is not None and self.height is not None:
            call[self.kind.area_arg] = self.width * self.height  # else the class keeps only their ratio
        if self.kind.rewrite_arg is not None:
            call[self.kind.rewrite_arg] = self.prompt_rewrite
        return call
