"""Understanding with chat models (any AutoModelForImageTextToText checkpoint, and Janus in text mode).

Prompts are laid out by the checkpoint's own chat template, so each model sees images and turns the way
it was trained to. Every function here blocks; the backend calls them in a worker thread while holding
the model's lock.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from PIL import Image

from umni.errors import BackendError
from umni.roles import ChoiceReply, Detection, Part, Usage, option_letter

from .hf_loading import LoadedModel
from .hf_parsing import ABSOLUTE_PIXEL_FAMILIES, GRID, choice_prompt, grounding_prompt, parse_choice, parse_grounding

#: Enough for "Answer: (B)" and a little slack; longer replies are not needed to find a letter.
LETTER_REPLY_TOKENS = 16
GROUNDING_REPLY_TOKENS = 512


def chat_messages(parts: Sequence[Part], suffix: str = "") -> list[dict[str, Any]]:
    """One user turn holding the parts in order (images where they sit), plus an optional suffix."""
    content: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, Image.Image):
            content.append({"type": "image", "image": part.convert("RGB")})
        else:
            content.append({"type": "text", "text": str(part)})
    if suffix:
        content.append({"type": "text", "text": suffix})
    return [{"role": "user", "content": content}]


def chat_inputs(loaded: LoadedModel, parts: Sequence[Part], suffix: str = "") -> Any:
    """Token ids, masks and pixel tensors for one prompt, on the model's device and dtype."""
    inputs = loaded.processor.apply_chat_template(
        chat_messages(parts, suffix),
        add_generation_prompt=True,
        tokenize=True,
        return_dict=True,
        return_tensors="pt",
    )
    return inputs.to(loaded.model.device, dtype=loaded.model.dtype)


def _tokenizer(loaded: LoadedModel) -> Any:
    return getattr(loaded.processor, "tokenizer", loaded.processor)


def _image_count(parts: Sequence[Part]) -> int:
    return sum(isinstance(p, Image.Image) for p in parts)


def generate_text(
    loaded: LoadedModel, parts: Sequence[Part], *, max_new_tokens: int, temperature: float, seed: int,
    suffix: str = "",
) -> tuple[str, Usage]:
    """The model's reply to one prompt: greedy at temperature 0, else sampled from `seed`.

    transformers samples from torch's global generator, so sampling seeds it; the model lock keeps
    other calls on this model from interleaving.
    """
    import torch

    inputs = chat_inputs(loaded, parts, suffix)
    tokenizer = _tokenizer(loaded)
    options: dict[str, Any] = {"max_new_tokens": max_new_tokens, "do_sample": temperature > 0}
    if temperature > 0:
        options["temperature"] = temperature
        torch.manual_seed(seed)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    with torch.inference_mode():
        output = loaded.model.generate(**inputs, pad_token_id=pad, **options)
    prompt_length = inputs["input_ids"].shape[1]
    new_tokens = output[:, prompt_length:]
    text = tokenizer.batch_decode(new_tokens, skip_special_tokens=True)[0].strip()
    usage = Usage(input_tokens=prompt_length, output_tokens=int(new_tokens.shape[1]), images_in=_image_count(parts))
    return text, usage


def choose_by_letter(
    loaded: LoadedModel, parts: Sequence[Part], options: Sequence[str], *, temperature: float, seed: int,
) -> ChoiceReply:
    """Ask for the option letter and read it from the reply (None when the reply names no option)."""
    text, usage = generate_text(
        loaded, parts, max_new_tokens=LETTER_REPLY_TOKENS, temperature=temperature, seed=seed,
        suffix=choice_prompt(options),
    )
    return ChoiceReply(index=parse_choice(text, options), text=text, mode="letter", usage=usage)


def choose_by_likelihood(loaded: LoadedModel, parts: Sequence[Part], options: Sequence[str]) -> ChoiceReply:
    """Pick the option whose letter is the most probable next token after the prompt.

    Needs no parsing and always yields a valid index. A letter may be one token with or without a
    leading space depending on the tokenizer, so both spellings are scored and the better one counts.
    """
    import torch

    tokenizer = _tokenizer(loaded)
    candidates = [_letter_token_ids(tokenizer, option_letter(i)) for i in range(len(options))]
    missing = [option_letter(i) for i, ids in enumerate(candidates) if not ids]
    if missing:
        raise BackendError(
            f"mode=likelihood: the tokenizer has no single token for option letter(s) {', '.join(missing)}; "
            "use mode=letter for this model",
            retryable=False,
        )
    inputs = chat_inputs(loaded, parts, choice_prompt(options))
    with torch.inference_mode():
        logits = loaded.model(**inputs).logits[0, -1].float()
    log_probs = torch.log_softmax(logits, dim=-1)
    scores = [max(float(log_probs[t]) for t in ids) for ids in candidates]
    best = max(range(len(options)), key=lambda i: scores[i])
    usage = Usage(input_tokens=int(inputs["input_ids"].shape[1]), output_tokens=0, images_in=_image_count(parts))
    return ChoiceReply(index=best, text=option_letter(best), mode="likelihood", usage=usage)


def _letter_token_ids(tokenizer: Any, letter: str) -> list[int]:
    ids = []
    for spelling in (letter, " " + letter):
        encoded = tokenizer.encode(spelling, add_special_tokens=False)
        if len(encoded) == 1 and encoded[0] not in ids:
            ids.append(encoded[0])
    return ids


def ground(
    loaded: LoadedModel, image: Image.Image, labels: Sequence[str], *, max_new_tokens: int = GROUNDING_REPLY_TOKENS,
) -> list[Detection]:
    """Boxes from a VLM asked to answer in JSON, on a 0..1000 grid or, for families that answer in
    pixels (Qwen2.5-VL), in pixels of the image as the processor resized it; ParseFailure if it does not."""
    seen = _seen_size(loaded, image) if _family(loaded) in ABSOLUTE_PIXEL_FAMILIES else None
    text, _ = generate_text(
        loaded, [image, grounding_prompt(labels, pixels=seen)], max_new_tokens=max_new_tokens, temperature=0.0, seed=0,
    )
    frame = (float(seen[0]), float(seen[1])) if seen else (GRID, GRID)
    return parse_grounding(text, labels, image.width, image.height, frame=frame)


def _family(loaded: LoadedModel) -> str:
    return str(getattr(loaded.model.config, "model_type", ""))


def _seen_size(loaded: LoadedModel, image: Image.Image) -> tuple[int, int]:
    """(width, height) of the image as the model sees it: Qwen's processor resizes to whole patches and
    reports the patch grid it made (``image_grid_thw``), so the size comes from the processor itself."""
    processor = loaded.processor.image_processor
    grid = processor(images=[image.convert("RGB")], return_tensors="pt")["image_grid_thw"][0]
    patch = int(processor.patch_size)
    return int(grid[2]) * patch, int(grid[1]) * patch
