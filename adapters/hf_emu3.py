"""Image generation with Emu3 through transformers' own Emu3ForConditionalGeneration.

Emu3 writes an image as ordinary next tokens: a grid of VQ codes ("visual tokens"), one end-of-line
token after each row, then end-of-frame, end-of-image and end-of-sequence. ``generate`` is constrained
to that layout step by step (only visual tokens inside a row, the fixed tokens where they belong), and
guidance runs against an empty prompt, as Emu3's model card does. Sampling draws from torch's global
generator, so each image is made in its own call, seeded from its own seed: the backend never batches
Emu3 images with each other, and an image does not depend on what else runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from PIL import Image

from umni.plugin import ConfigError, Part, Usage

from .hf_loading import LoadedModel
from .hf_vlm import chat_messages


def generate_images(
    loaded: LoadedModel, requests: Sequence[tuple[Sequence[Part], int]], *, cfg: float, temperature: float,
    side: int,
) -> list[tuple[Image.Image, Usage]]:
    """One image per (prompt, seed), one after another. Blocking; call in a worker thread holding the lock."""
    return [_generate_one(loaded, parts, seed, cfg=cfg, temperature=temperature, side=side) for parts, seed in requests]


def _generate_one(
    loaded: LoadedModel, parts: Sequence[Part], seed: int, *, cfg: float, temperature: float, side: int,
) -> tuple[Image.Image, Usage]:
    import torch

    if any(isinstance(part, Image.Image) for part in parts):
        raise ConfigError("Emu3 generation here takes a text prompt only; image-conditioned generation is not wired")
    model, processor = loaded.model, loaded.processor
    tokenizer = processor.tokenizer
    prompt = processor.apply_chat_template(chat_messages(parts), add_generation_prompt=True, tokenize=False)
    area = side * side
    inputs = processor(text=[prompt], return_tensors="pt", return_for_image_generation=True, image_area=area)
    height, width = (int(v) for v in inputs.pop("image_sizes")[0])
    inputs = inputs.to(model.device)
    options: dict[str, Any] = {"do_sample": temperature > 0}
    if temperature > 0:
        options["temperature"] = temperature
    if cfg != 1.0:
        empty = processor(text=[""], return_tensors="pt", return_for_image_generation=True, image_area=area)
        options["guidance_scale"] = cfg
        options["negative_prompt_ids"] = empty["input_ids"].to(model.device)
        options["negative_prompt_attention_mask"] = empty["attention_mask"].to(model.device)
    layout = _layout(model, tokenizer, height, width)
    torch.manual_seed(seed)
    with torch.inference_mode():
        output = model.generate(
            **inputs, max_new_tokens=height * (width + 1) + 3, prefix_allowed_tokens_fn=layout,
            pad_token_id=tokenizer.pad_token_id, **options,
        )
        new = output[:, inputs["input_ids"].shape[1]:]
        pixels = model.decode_image_tokens(image_tokens=new, height=height, width=width)
    image = processor.postprocess(list(pixels.float().cpu()), return_tensors="PIL.Image.Image")["pixel_values"][0]
    usage = Usage(input_tokens=int(inputs["input_ids"].shape[1]), output_tokens=int(new.shape[1]), images_out=1)
    return image.convert("RGB"), usage


def _layout(model: Any, tokenizer: Any, height: int, width: int) -> Any:
    """The tokens allowed at each step: visual tokens in a row, end-of-line after it, then the closing three."""
    visual = list(model.vocabulary_mapping.image_tokens)
    wrapper = tokenizer.image_wrapper_token_id
    eol = [model.vocabulary_mapping.eol_token_id]
    closing = [[tokenizer.eof_token_id], [tokenizer.eoi_token_id], [tokenizer.eos_token_id]]
    grid = (width + 1) * height

    def allowed(_batch: int, input_ids: Any) -> list[int]:
        start = int((input_ids == wrapper).nonzero()[0][0])
        offset = input_ids.shape[0] - start
        if offset > grid:
            return closing[min(offset - grid - 1, 2)]
        if offset % (width + 1) == 0:
            return eol
        return visual

    return allowed
