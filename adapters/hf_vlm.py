"""Understanding with chat models (any AutoModelForImageTextToText checkpoint, and Janus in text mode).

Prompts are laid out by the checkpoint's own chat template, so each model sees images and turns the way
it was trained to. Every function here blocks; the backend calls them in a worker thread while holding
the model's lock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from PIL import Image

from umni.backends.roles import ChoiceReply, Detection, Part, Usage, option_letter
from umni.util.errors import BackendError

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


def chat_inputs(loaded: LoadedModel, prompts: Sequence[tuple[Sequence[Part], str]]) -> Any:
    """Token ids, masks and pixel tensors for a batch of prompts, left-padded, on the model's device and dtype.

    Left padding keeps every prompt's last token in the last column, so one generate call continues all
    of them and the last-position logits of each row belong to its own prompt; the attention mask hides
    the padding, and generate derives positions from it, so a padded row sees what it would see alone.
    """
    conversations = [chat_messages(parts, suffix) for parts, suffix in prompts]
    inputs = loaded.processor.apply_chat_template(
        conversations,
        add_generation_prompt=True,
        tokenize=True,
        return_dict=True,
        return_tensors="pt",
        processor_kwargs={"padding": len(conversations) > 1, "padding_side": "left"},
    )
    return inputs.to(loaded.model.device, dtype=loaded.model.dtype)


def _tokenizer(loaded: LoadedModel) -> Any:
    return getattr(loaded.processor, "tokenizer", loaded.processor)


def _image_count(parts: Sequence[Part]) -> int:
    return sum(isinstance(p, Image.Image) for p in parts)


@dataclass(frozen=True)
class TextRequest:
    """One prompt of a batched text call: its parts, a suffix appended as the last text, and its seed."""

    parts: Sequence[Part]
    suffix: str = ""
    seed: int = 0


def generate_texts(
    loaded: LoadedModel, requests: Sequence[TextRequest], *, max_new_tokens: int, temperature: float,
) -> list[tuple[str, Usage]]:
    """The model's reply to each prompt, in one generate call: greedy at temperature 0, else sampled.

    transformers samples from torch's global generator, which rows of a batch share, so a sampled
    reply would depend on its batch-mates: sampling takes one request per call (the backend never
    batches it) and seeds the global generator from that request's seed.
    """
    import torch

    if temperature > 0 and len(requests) > 1:
        raise ValueError("sampled text generation takes one request per call")
    inputs = chat_inputs(loaded, [(r.parts, r.suffix) for r in requests])
    tokenizer = _tokenizer(loaded)
    options: dict[str, Any] = {"max_new_tokens": max_new_tokens, "do_sample": temperature > 0}
    if temperature > 0:
        options["temperature"] = temperature
        torch.manual_seed(requests[0].seed)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    with torch.inference_mode():
        output = loaded.model.generate(**inputs, pad_token_id=pad, **options)
    width = inputs["input_ids"].shape[1]
    prompt_lengths = inputs["attention_mask"].sum(dim=1).tolist()
    replies = []
    for row, request in enumerate(requests):
        new_tokens = output[row, width:]
        # Rows that finished early are padded after their end; those tokens are not part of the reply.
        produced = int((new_tokens != pad).sum()) if pad is not None else int(new_tokens.shape[0])
        text = tokenizer.decode(new_tokens, skip_special_tokens=True).strip()
        usage = Usage(
            input_tokens=int(prompt_lengths[row]), output_tokens=produced, images_in=_image_count(request.parts),
        )
        replies.append((text, usage))
    return replies


def generate_text(
    loaded: LoadedModel, parts: Sequence[Part], *, max_new_tokens: int, temperature: float, seed: int,
    suffix: str = "",
) -> tuple[str, Usage]:
    """The reply to one prompt (see generate_texts)."""
    request = TextRequest(parts, suffix, seed)
    return generate_texts(loaded, [request], max_new_tokens=max_new_tokens, temperature=temperature)[0]


def choose_by_letter(
    loaded: LoadedModel, requests: Sequence[tuple[Sequence[Part], Sequence[str], int]], *, temperature: float,
) -> list[ChoiceReply]:
    """Ask each prompt for its option letter and read it from the reply (None when the reply names none)."""
    texts = generate_texts(
        loaded, [TextRequest(parts, choice_prompt(options), seed) for parts, options, seed in requests],
        max_new_tokens=LETTER_REPLY_TOKENS, temperature=temperature,
    )
    return [
        ChoiceReply(index=parse_choice(text, options), text=text, mode="letter", usage=usage)
        for (text, usage), (_, options, _) in zip(texts, requests)
    ]


def choose_by_likelihood(
    loaded: LoadedModel, requests: Sequence[tuple[Sequence[Part], Sequence[str]]],
) -> list[ChoiceReply]:
    """For each prompt, the option whose letter is the most probable next token, in one forward pass.

    Needs no parsing and always yields a valid index. A letter may be one token with or without a
    leading space depending on the tokenizer, so both spellings are scored and the better one counts.
    Prompts are left-padded, so the last column holds every prompt's next-token logits.
    """
    import torch

    tokenizer = _tokenizer(loaded)
    most = max(len(options) for _, options in requests)
    candidates = [_letter_token_ids(tokenizer, option_letter(i)) for i in range(most)]
    missing = [option_letter(i) for i, ids in enumerate(candidates) if not ids]
    if missing:
        raise BackendError(
            f"mode=likelihood: the tokenizer has no single token for option letter(s) {', '.join(missing)}; "
            "use mode=letter for this model",
            retryable=False,
        )
    inputs = chat_inputs(loaded, [(parts, choice_prompt(options)) for parts, options in requests])
    with torch.inference_mode():
        logits = loaded.model(**inputs).logits[:, -1].float()
    log_probs = torch.log_softmax(logits, dim=-1)
    lengths = inputs["attention_mask"].sum(dim=1).tolist()
    replies = []
    for row, (parts, options) in enumerate(requests):
        scores = [max(float(log_probs[row, t]) for t in candidates[i]) for i in range(len(options))]
        best = max(range(len(options)), key=lambda i: scores[i])
        usage = Usage(input_tokens=int(lengths[row]), output_tokens=0, images_in=_image_count(parts))
        replies.append(ChoiceReply(index=best, text=option_letter(best), mode="likelihood", usage=usage))
    return replies


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
