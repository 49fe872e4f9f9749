"""Image generation with Janus / Janus-Pro: image tokens sampled one by one under classifier-free guidance.

transformers' own `generate(generation_mode="image")` samples from torch's global generator across the
whole batch, so an image would depend on what else was generated with it. Here each image has its own
`torch.Generator` seeded from the node's seed, and images are made one at a time, so the same seed and
prompt give the same pixels whatever else runs.
"""

from __future__ import annotations

from collections.abc import Sequence

from PIL import Image

from umni.roles import Part, Usage

from .hf_loading import LoadedModel
from .hf_vlm import chat_messages


def generate_image(
    loaded: LoadedModel, parts: Sequence[Part], *, seed: int, cfg: float, temperature: float,
) -> tuple[Image.Image, Usage]:
    """One image for the prompt. Blocking; call in a worker thread holding the model lock.

    The unconditional branch sees the same prompt with every token but BOS and begin-of-image replaced
    by padding, as Janus was trained; guidance mixes the two as uncond + cfg * (cond - uncond).
    Temperature 0 takes the most likely token at each step instead of sampling.
    """
    import torch
    from transformers import DynamicCache

    model, processor = loaded.model, loaded.processor
    tokenizer = processor.tokenizer
    images = [p.convert("RGB") for p in parts if isinstance(p, Image.Image)]
    prompt = processor.apply_chat_template(chat_messages(parts), add_generation_prompt=True, tokenize=False)
    inputs = processor(text=prompt, images=images or None, generation_mode="image", return_tensors="pt")
    inputs = inputs.to(model.device, dtype=model.dtype)

    cond = inputs["input_ids"]
    kept = (cond == tokenizer.bos_token_id) | (cond == tokenizer.convert_tokens_to_ids(processor.image_start_token))
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    uncond = torch.where(kept, cond, torch.full_like(cond, pad))
    pair = torch.cat([cond, uncond])
    n_tokens = model.config.vision_config.num_image_tokens

    generator = torch.Generator(device=model.device).manual_seed(seed)
    cache = DynamicCache()
    chosen = torch.empty((1, n_tokens), dtype=torch.long, device=model.device)
    attention = torch.ones((2, pair.shape[1] + n_tokens), dtype=torch.long, device=model.device)
    with torch.inference_mode():
        # Prefill through the full model so images in the prompt are encoded into their placeholders
        # (only the conditional row has placeholders; the unconditional row was padded).
        hidden = model.model(
            input_ids=pair, pixel_values=inputs.get("pixel_values"), attention_mask=attention[:, : pair.shape[1]],
            past_key_values=cache, use_cache=True,
        ).last_hidden_state
        for step in range(n_tokens):
            logits = model.model.generation_head(hidden[:, -1, :]).float()
            guided = logits[1] + cfg * (logits[0] - logits[1])
            if temperature > 0:
                probs = torch.softmax(guided / temperature, dim=-1)
                token = torch.multinomial(probs, 1, generator=generator)
            else:
                token = guided.argmax(dim=-1, keepdim=True)
            chosen[0, step] = token[0]
            if step + 1 == n_tokens:
                break
            embeds = model.prepare_embeddings_for_image_generation(token.repeat(2).unsqueeze(-1))
            hidden = model.model.language_model(
                inputs_embeds=embeds, attention_mask=attention[:, : pair.shape[1] + step + 1],
                past_key_values=cache, use_cache=True,
            ).last_hidden_state
        decoded = model.decode_image_tokens(chosen)
    image = _to_pil(decoded[0].float().cpu())
    usage = Usage(input_tokens=int(cond.shape[1]), output_tokens=n_tokens, images_in=len(images), images_out=1)
    return image, usage


def _to_pil(pixels) -> Image.Image:
    """An (H, W, 3) VQ decoder output in [-1, 1] as 8-bit RGB.

    The VQ decoder's range is fixed by how it was trained, independent of the normalisation the
    understanding image processor applies to inputs, so it is mapped by hand rather than through the
    processor's postprocess (which also guesses the channel axis from the shape and fails on small images).
    """
    import numpy as np

    array = (pixels.numpy() + 1.0) * 127.5
    return Image.fromarray(np.clip(np.rint(array), 0, 255).astype(np.uint8), mode="RGB")
