"""YOUR MODEL'S INFERENCE CODE GOES HERE. Everything below is a stand-in (``StandInUMM``) so the
template runs end to end; replace the bodies of ``load``, ``answer_batch``, ``generate_batch`` and
``edit_batch`` with calls into your model's own repository, for instance:

- BAGEL: ``InterleaveInferencer(model, vae_model, tokenizer, ...)`` with ``understanding_output=True``
  for answers, and its image output for generate / edit;
- OmniGen2: ``OmniGen2Pipeline.from_pretrained(...)(prompt=..., input_images=..., generator=...)``;
- Show-o2, BLIP3-o, Ovis-U1: their ``inference`` scripts' model calls, minus argument parsing.

The contract these four functions keep, which is what makes umni's results correct:

1. **Batches**: each takes a list of requests and returns one result per request, in order. If
   your model cannot batch a role, loop over the requests inside the function; umni's batcher
   still groups calls, and the results stay right.
2. **Seeds**: each request comes with its own ``torch.Generator`` (seeded from the request's seed).
   Every random draw for that request (initial noise, sampled tokens) must use *that* generator,
   never torch's global one, so a result is the same alone or in any batch. If your code samples
   from the global generator internally, run that role one request per call (``batchable=False``
   in backend.py) and call ``torch.manual_seed(seed)`` before it.
3. **No hidden defaults**: every setting that changes outputs is an argument here, set from the
   spec in backend.py, so it lands in the backend identity and the cache never mixes settings.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image

#: A prompt as umni passes it: text and images in order.
Parts = Sequence[str | Image.Image]


@dataclass
class StandInUMM:
    """STAND-IN for a real model: deterministic functions of the text, the images and the generator.

    Not a model; it exists so the template (and its test) runs without weights.
    """

    config: dict[str, Any]
    device: str


def load(checkpoint: Path, *, device: str, dtype: str, trust_remote_code: bool) -> StandInUMM:
    """Load the model from its checkpoint folder. REPLACE with your model's loader.

    ``trust_remote_code`` is True only when the user opted in on the spec: pass it on to
    ``from_pretrained(..., trust_remote_code=...)`` if your loader takes it, and never set it yourself.
    """
    config = json.loads((checkpoint / "config.json").read_text(encoding="utf-8"))
    return StandInUMM(config=config, device=device)


def _text_of(parts: Parts) -> str:
    return " ".join(part for part in parts if isinstance(part, str))


def _noise_image(text: str, size: tuple[int, int], generator: torch.Generator) -> Image.Image:
    """STAND-IN drawing: noise from the request's generator, tinted by the text."""
    width, height = size
    tint = torch.tensor(list(hashlib.sha256(text.encode()).digest()[:3]), dtype=torch.float32)
    noise = torch.rand((height, width, 3), generator=generator) * 128
    pixels = (noise + tint / 2).clamp(0, 255).to(torch.uint8).numpy()
    return Image.fromarray(pixels, mode="RGB")


def answer_batch(
    model: StandInUMM, prompts: Sequence[Parts], generators: Sequence[torch.Generator], *, max_new_tokens: int,
    temperature: float,
) -> list[str]:
    """One text reply per prompt. REPLACE with your model's understanding call (batched if it can)."""
    replies = []
    for parts, generator in zip(prompts, generators):
        text = _text_of(parts)
        if "Options:" in text:  # a multiple-choice prompt: answer with one of its letters
            letters = [line[0] for line in text.split("Options:")[-1].splitlines() if line[1:2] == "."]
            pick = int(torch.randint(len(letters), (1,), generator=generator)) if temperature > 0 else 0
            replies.append(letters[pick] if letters else "A")
            continue
        words = text.split() or ["nothing"]
        if temperature > 0:  # sampled: draw with this request's own generator only
            start = int(torch.randint(len(words), (1,), generator=generator))
        else:
            start = 0
        replies.append(" ".join(words[start:start + max_new_tokens]))
    return replies


def generate_batch(
    model: StandInUMM, prompts: Sequence[Parts], generators: Sequence[torch.Generator], *, steps: int,
    size: tuple[int, int],
) -> list[Image.Image]:
    """One image per prompt. REPLACE with your model's text-to-image call, passing ``generator=generators``
    (diffusers-style pipelines take a list, one per image)."""
    return [_noise_image(_text_of(parts) + str(steps), size, g) for parts, g in zip(prompts, generators)]


def edit_batch(
    model: StandInUMM, images: Sequence[Sequence[Image.Image]], instructions: Sequence[str],
    generators: Sequence[torch.Generator], *, steps: int,
) -> list[Image.Image]:
    """One edited image per request (each with its own input images). REPLACE with your model's edit call."""
    edited = []
    for inputs, instruction, generator in zip(images, instructions, generators):
        base = np.asarray(inputs[0].convert("RGB"), dtype=np.float32)
        overlay = np.asarray(_noise_image(instruction + str(steps), inputs[0].size, generator), dtype=np.float32)
        edited.append(Image.fromarray(((base + overlay) / 2).astype(np.uint8), mode="RGB"))
    return edited
