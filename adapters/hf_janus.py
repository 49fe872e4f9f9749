"""Image generation with Janus / Janus-Pro: image tokens sampled one by one under classifier-free guidance.

transformers' own `generate(generation_mode="image")` samples from torch's global generator across the
whole batch, so an image would depend on what else was generated with it. Here each image has its own
`torch.Generator` seeded from the node's seed and sampled from its own row, so the same seed and prompt
give the same pixels whatever else is in the batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from PIL import Image

from umni.plugin import Part, Usage

from .hf_loading import LoadedModel
from .hf_vlm import chat_messages


def generate_images(
    loaded: LoadedModel, requests: Sequence[tuple[Sequence[Part], int]], *, cfg: float, temperature: float,
) -> list[tuple[Image.Image, Usage]]:
    """One image per (prompt, seed). Blocking; call in a worker thread holding the model lock.

    Prompts of equal token length run together as one batch; others run in further batches of their
    own length, so no prompt is padded and every row sees exactly what it would see alone.
    """
    prepared = [_prepare(loaded, parts) for parts, _ in requests]
    results: list[tuple[Image.Image, Usage] | None] = [None] * len(requests)
    by_length: dict[int, list[int]] = {}
    for index, (cond, _, _) in enumerate(prepared):
        by_length.setdefault(int(cond.shape[1]), []).append(index)
    for indices in by_length.values():
        images = _generate_group(
            loaded, [prepared[i] for i in indices], [requests[i][1] for i in indices], cfg=cfg, temperature=temperature,
        )
        for i, image in zip(indices, images):
            cond, _, n_images = prepared[i]
            n_tokens = loaded.model.config.vision_config.num_image_tokens
            results[i] = (
                image, Usage(input_tokens=int(cond.shape[1]), output_tokens=n_tokens, images_in=n_images, images_out=1),
            )
    return [result for result in results if result is not None]


def generate_image(
    loaded: LoadedModel, parts: Sequence[Part], *, seed: int, cfg: float, temperature: float,
) -> tuple[Image.Image, Usage]:
    """One image for the prompt (see generate_images)."""
    return generate_images(loaded, [(parts, seed)], cfg=cfg, temperature=temperature)[0]


def _prepare(loaded: LoadedModel, parts: Sequence[Part]) -> tuple[Any, Any, int]:
    """(prompt ids, pixel values or None, number of images) for one prompt in image-generation mode."""
    processor = loaded.processor
    images = [p.convert("RGB") for p in parts if isinstance(p, Image.Image)]
    prompt = processor.apply_chat_template(chat_messages(parts), add_generation_prompt=True, tokenize=False)
    inputs = processor(text=prompt, images=images or None, generation_mode="image", return_tensors="pt")
    inputs = inputs.to(loaded.model.device, dtype=loaded.model.dtype)
    return inputs["input_ids"], inputs.get("pixel_values"), len(images)


def _generate_group(
    loaded: LoadedModel, prepared: Sequence[tuple[Any, Any, int]], seeds: Sequence[int], *, cfg: float,
    temperature: float,
) -> list[Image.Image]:
    """Images for prompts of one token length, sampled together with one generator per image.

    The unconditional branch sees the same prompt with every token but BOS and begin-of-image replaced
    by padding, as Janus was trained; guidance mixes the two as uncond + cfg * (cond - uncond).
    Temperature 0 takes the most likely token at each step instead of sampling. Rows are laid out as
    all conditional rows, then all unconditional rows.
    """
    import torch
    from transformers import DynamicCache

    model, processor = loaded.model, loaded.processor
    tokenizer = processor.tokenizer
    count = len(prepared)
    cond = torch.cat([ids for ids, _, _ in prepared])
    kept = (cond == tokenizer.bos_token_id) | (cond == tokenizer.convert_tokens_to_ids(processor.image_start_token))
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    uncond = torch.where(kept, cond, torch.full_like(cond, pad))
    pair = torch.cat([cond, uncond])
    pixels = [values for _, values, _ in prepared if values is not None]
    n_tokens = model.config.vision_config.num_image_tokens

    generators = [torch.Generator(device=model.device).manual_seed(seed) for seed in seeds]
    cache = DynamicCache()
    chosen = torch.empty((count, n_tokens), dtype=torch.long, device=model.device)
    attention = torch.ones((2 * count, pair.shape[1] + n_tokens), dtype=torch.long, device=model.device)
    with torch.inference_mode():
        # Prefill through the full model so images in the prompt are encoded into their placeholders
        # (only the conditional rows have placeholders; the unconditional rows were padded).
        hidden = model.model(
            input_ids=pair, pixel_values=torch.cat(pixels) if pixels else None,
            attention_mask=attention[:, : pair.shape[1]], past_key_values=cache, use_cache=True,
        ).last_hidden_state
        for step in range(n_tokens):
            logits = model.model.generation_head(hidden[:, -1, :]).float()
            guided = logits[count:] + cfg * (logits[:count] - logits[count:])
            if temperature > 0:
                probs = torch.softmax(guided / temperature, dim=-1)
                tokens = torch.cat([
                    torch.multinomial(probs[row], 1, generator=generator) for row, generator in enumerate(generators)
                ])
            else:
                tokens = guided.argmax(dim=-1)
            chosen[:, step] = tokens
            if step + 1 == n_tokens:
                break
            embeds = model.prepare_embeddings_for_image_generation(tokens.repeat(2).unsqueeze(-1))
            hidden = model.model.language_model(
                inputs_embeds=embeds, attention_mask=attention[:, : pair.shape[1] + step + 1],
                past_key_values=cache, use_cache=True,
            ).last_hidden_state
        decoded = model.decode_image_tokens(chosen)
    return [_to_pil(decoded[row].float().cpu()) for row in range(count)]


def _to_pil(pixels) -> Image.Image:
    """An (H, W, 3) VQ decoder output in [-1, 1] as 8-bit RGB.

    The VQ decoder's range is fixed by how it was trained, independent of the normalisation the
    understanding image processor applies to inputs, so it is mapped by hand rather than through the
    processor's postprocess (which also guesses the channel axis from the shape and fails on small images).
    """
    import numpy as np

    array = (pixels.numpy() + 1.0) * 127.5
    return Image.fromarray(np.clip(np.rint(array), 0, 255).astype(np.uint8), mode="RGB")
