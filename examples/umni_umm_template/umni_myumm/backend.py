"""The ``myumm`` backend: spec ``myumm/<checkpoint folder>?steps=..&size=..&temperature=..``.

The umni side of a plugin for a unified model with its own inference code. It fills every role a
UMM can (understand, judge, generate, edit) by calling the four functions of ``inference.py``, and
handles what umni needs of any backend:

- **Roles**: ``fills()`` says which roles this checkpoint serves (drop the ones your model lacks
  from ``roles``), so a wrong binding fails before any work.
- **Batching**: concurrent requests of one role and one setting go to the model together through
  umni's ``MicroBatcher`` (up to ``batch_size`` per call); a role whose code cannot batch is marked
  ``batchable=False`` and runs one request per call.
- **Seeds**: each request gets a ``torch.Generator`` seeded from its own seed, so a result depends on
  its prompt, seed and settings only, never on its batch-mates.
- **Identity**: a hash of every file in the checkpoint folder (weights included, hashed once and
  remembered by size and mtime) plus every output-affecting setting with its default written out,
  so the cache never answers new weights or settings from old results.
- **Remote code**: a checkpoint that carries Python code (``*.py`` files, or ``auto_map`` in its
  config.json) is refused unless the spec says ``trust_remote_code=true``: nothing a checkpoint
  ships is executed by default. The flag is the user's opt-in for their own checkpoint; it is
  passed to ``inference.load`` and nowhere else.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

import anyio.to_thread
from PIL import Image
from pydantic import NonNegativeFloat, PositiveInt

from umni.plugin import (
    EDIT,
    GENERATE,
    JUDGE,
    UNDERSTAND,
    Backend,
    BackendError,
    BackendParams,
    ChoiceReply,
    ConfigError,
    ImageReply,
    Part,
    Spec,
    TextReply,
    Usage,
    file_sha256,
    option_letter,
    parse_choice,
)
from umni_adapters.batching import MicroBatcher

from . import inference


class MyUMMParams(BackendParams):
    """Spec parameters. ``steps``, ``size`` and ``temperature`` change outputs (and the identity);
    ``device``, ``dtype`` and ``trust_remote_code`` are where and whether to run."""

    operational: ClassVar[frozenset[str]] = BackendParams.operational | {"device", "trust_remote_code"}

    steps: PositiveInt = 30
    size: PositiveInt = 512
    temperature: NonNegativeFloat = 0.0
    max_new_tokens: PositiveInt = 256
    device: str = "cpu"
    dtype: str = "bf16"
    trust_remote_code: bool = False


class MyUMMBackend(Backend):
    """A unified model run by its own inference code (see inference.py)."""

    provider: ClassVar[str] = "myumm"
    roles: ClassVar[frozenset[str]] = frozenset({UNDERSTAND, JUDGE, GENERATE, EDIT})
    Params = MyUMMParams

    def __init__(self, spec: Spec) -> None:
        super().__init__(spec)
        params: MyUMMParams = self.params
        self.checkpoint = Path(spec.name).expanduser().resolve()
        config_file = self.checkpoint / "config.json"
        if not config_file.is_file():
            raise ConfigError(f"backend spec '{spec}': no checkpoint at '{self.checkpoint}' (config.json missing)")
        code = _remote_code(self.checkpoint, config_file)
        if code and not params.trust_remote_code:
            raise ConfigError(
                f"backend spec '{spec}': the checkpoint ships code ({', '.join(code[:3])}); umni runs no "
                "checkpoint code by default. If this is your own checkpoint and you trust it, add "
                "trust_remote_code=true to the spec"
            )
        self.batch_size: int = params.batch_size or 4
        self._model: Any = None
        self._batcher = MicroBatcher(self._run_group)
        self._lock = threading.Lock()

    @property
    def concurrency(self) -> int:
        return self.params.concurrency or 2 * self.batch_size

    # -- lifecycle ---------------------------------------------------------------------------------

    async def start(self) -> None:
        if self._model is not None:
            return
        params: MyUMMParams = self.params
        load = partial(
            inference.load, self.checkpoint, device=params.device, dtype=params.dtype,
            trust_remote_code=params.trust_remote_code,
        )
        try:
            self._model = await anyio.to_thread.run_sync(load)
        except (OSError, ValueError, RuntimeError) as exc:
            raise ConfigError(f"backend spec '{self.spec}': cannot load the model: {exc}") from exc

    def identity(self) -> dict[str, Any]:
        params: MyUMMParams = self.params
        return {
            "provider": self.provider,
            "model_version": _fingerprint(self.checkpoint),
            "dtype": params.dtype,
            "params": {"steps": params.steps, "size": params.size, "temperature": params.temperature,
                       "max_new_tokens": params.max_new_tokens},
        }

    # -- roles -------------------------------------------------------------------------------------

    async def respond(self, parts: Sequence[Part], *, max_tokens: int = 512, seed: int = 0) -> TextReply:
        params: MyUMMParams = self.params
        tokens = min(max_tokens, params.max_new_tokens)
        run = partial(inference.answer_batch, max_new_tokens=tokens, temperature=params.temperature)
        text = await self._submit(run, list(parts), seed, key=("answer", tokens))
        return TextReply(text=text, usage=Usage(calls=1, images_in=_images(parts)))

    async def choose(self, parts: Sequence[Part], options: Sequence[str], *, seed: int = 0) -> ChoiceReply:
        lines = [f"{option_letter(i)}. {option}" for i, option in enumerate(options)]
        prompt = [*parts, "\n\nOptions:\n" + "\n".join(lines) + "\nAnswer with the letter of the correct option."]
        reply = await self.respond(prompt, max_tokens=16, seed=seed)
        return ChoiceReply(index=parse_choice(reply.text, options), text=reply.text, mode="letter", usage=reply.usage)

    async def generate(self, parts: Sequence[Part], *, seed: int = 0) -> ImageReply:
        params: MyUMMParams = self.params
        run = partial(inference.generate_batch, steps=params.steps, size=(params.size, params.size))
        image = await self._submit(run, list(parts), seed, key=("generate",))
        return ImageReply(image=image, usage=Usage(calls=1, images_in=_images(parts), images_out=1))

    async def edit(self, images: Sequence[Image.Image], instruction: str, *, seed: int = 0) -> ImageReply:
        if not images:
            raise BackendError("myumm: edit called without an input image", retryable=False)
        params: MyUMMParams = self.params

        def run(model: Any, requests: list[tuple[list[Image.Image], str]], generators: list[Any]) -> list[Any]:
            return inference.edit_batch(
                model, [r[0] for r in requests], [r[1] for r in requests], generators, steps=params.steps,
            )

        inputs = [image.convert("RGB") for image in images]
        image = await self._submit(run, (inputs, instruction), seed, key=("edit", tuple(i.size for i in inputs)))
        return ImageReply(image=image, usage=Usage(calls=1, images_in=len(inputs), images_out=1))

    # -- batching ----------------------------------------------------------------------------------

    async def _submit(
        self, run: Callable[..., Sequence[Any]], request: Any, seed: int, *, key: tuple[Any, ...],
        batchable: bool = True,
    ) -> Any:
        """Queue one request; requests with the same ``key`` share one call of ``run`` (one per call
        where ``batchable`` is False: for code that draws from torch's global generator)."""
        await self.start()
        return await self._batcher.submit((run, request, seed), key=key, limit=self.batch_size if batchable else 1)

    def _run_group(self, payloads: list[tuple[Callable[..., Sequence[Any]], Any, int]]) -> list[Any]:
        import torch

        run = payloads[0][0]
        generators = [torch.Generator("cpu").manual_seed(int(seed)) for _, _, seed in payloads]
        with self._lock:
            return list(run(self._model, [request for _, request, _ in payloads], generators))


def _images(parts: Sequence[Part]) -> int:
    return sum(isinstance(part, Image.Image) for part in parts)


def _remote_code(checkpoint: Path, config_file: Path) -> list[str]:
    """What in the checkpoint would run as code: its Python files and an ``auto_map`` in config.json."""
    found = sorted(str(p.relative_to(checkpoint)) for p in checkpoint.rglob("*.py"))
    try:
        if "auto_map" in json.loads(config_file.read_text(encoding="utf-8")):
            found.append("config.json auto_map")
    except ValueError:
        pass
    return found


def _fingerprint(checkpoint: Path) -> str:
    """Every file's name and content hash (weights included; file_sha256 remembers large files)."""
    digest = hashlib.sha256()
    for file in sorted(p for p in checkpoint.rglob("*") if p.is_file() and not p.name.startswith(".")):
        digest.update(file.relative_to(checkpoint).as_posix().encode() + b"\0" + file_sha256(file).encode() + b"\n")
    return digest.hexdigest()
