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

from umni.plugin import BackendError, ChoiceReply, Detection, Part, Usage, option_letter

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

    transformers samples every row from torch's one global generator, so a sampled reply would
    depend on its batch-mates. Sampling is therefore done here instead (``SeededSampling``): each row
    draws its next token from its own generator, seeded from its request's seed, and generate only
    takes the one token left standing. A reply is then the same alone or in any batch.
    """
    import torch

    inputs = chat_inputs(loaded, [(r.parts, r.suffix) for r in requests])
    tokenizer = _tokenizer(loaded)
    options: dict[str, Any] = {"max_new_tokens": max_new_tokens, "do_sample": False}
    if temperature > 0:
        options["logits_processor"] = [SeededSampling.for_model(loaded.model, temperature, [r.seed for r in requests])]
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    with torch.inference_mode():
        output = _text_generate(loaded.model)(**inputs, pad_token_id=pad, **options)
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


def _text_generate(model: Any) -> Any:
    """The model's text ``generate``. Janus overrides generate and, in text mode, drops the
    ``logits_processor`` argument before calling the standard one, so Janus text goes to the standard
    one directly (what its override does, minus the drop; guidance stays off as there)."""
    if _family_of(model) == "janus":
        from functools import partial

        from transformers import GenerationMixin

        return partial(GenerationMixin.generate, model, guidance_scale=None)
    return model.generate


def _family_of(model: Any) -> str:
    return str(getattr(model.config, "model_type", ""))


class SeededSampling:
    """A logits processor that samples each row from its own seeded generator.

    It scales the row's logits by the temperature, keeps the checkpoint's own ``top_k`` / ``top_p``
    (from its generation config, as transformers' sampling would), draws one token with the row's
    generator and masks every other token, so greedy decoding then takes exactly that token. Rows
    never share random state: the draw of row ``i`` at step ``t`` depends on its seed and its own
    logits only. Rows that already ended keep drawing (their tokens are replaced by padding), which
    touches only their own generators.
    """

    def __init__(self, temperature: float, seeds: Sequence[int], *, top_k: int | None, top_p: float | None) -> None:
        import torch

        self.temperature = temperature
        self.generators = [torch.Generator("cpu").manual_seed(int(seed)) for seed in seeds]
        self.top_k = top_k if top_k and top_k > 0 else None
        self.top_p = top_p if top_p is not None and top_p < 1.0 else None

    @classmethod
    def for_model(cls, model: Any, temperature: float, seeds: Sequence[int]) -> SeededSampling:
        config = getattr(model, "generation_config", None)
        return cls(temperature, seeds, top_k=getattr(config, "top_k", None), top_p=getattr(config, "top_p", None))

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch
        from transformers import TopKLogitsWarper, TopPLogitsWarper

        warped = scores.float() / self.temperature
        if self.top_k is not None:
            warped = TopKLogitsWarper(self.top_k)(input_ids, warped)
        if self.top_p is not None:
            warped = TopPLogitsWarper(self.top_p)(input_ids, warped)
        probs = torch.softmax(warped, dim=-1).cpu()
        chosen = torch.full_like(scores, float("-inf"))
        for row, generator in enumerate(self.generators):
            token = int(torch.multinomial(probs[row], 1, generator=generator))
            chosen[row, token] = 0.0
        return chosen


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
    loaded: LoadedModel, requests: Sequence[tuple[Image.Image, Sequence[str]]], *,
    max_new_tokens: int = GROUNDING_REPLY_TOKENS,
) -> list[list[Detection] | Exception]:
    """Boxes for each (image, labels) request, in one greedy generate call: the VLM is asked to answer
    in JSON, on a 0..1000 grid or, for families that answer in pixels (Qwen2.5-VL), in pixels of the
    image as the processor resized it. A reply that does not parse is that request's ParseFailure."""
    absolute = _family(loaded) in ABSOLUTE_PIXEL_FAMILIES
    seen = [_seen_size(loaded, image) if absolute else None for image, _ in requests]
    prompts = [
        TextRequest([image, grounding_prompt(labels, pixels=size)]) for (image, labels), size in zip(requests, seen)
    ]
    texts = generate_texts(loaded, prompts, max_new_tokens=max_new_tokens, temperature=0.0)
    results: list[list[Detection] | Exception] = []
    for (text, _), (image, labels), size in zip(texts, requests, seen):
        frame = (float(size[0]), float(size[1])) if size else (GRID, GRID)
        try:
            results.append(parse_grounding(text, labels, image.width, image.height, frame=frame))
        except Exception as exc:  # this request's reply failed to parse; its batch-mates still count
            results.append(exc)
    return results


def _family(loaded: LoadedModel) -> str:
    return str(getattr(loaded.model.config, "model_type", ""))


def _seen_size(loaded: LoadedModel, image: Image.Image) -> tuple[int, int]:
    """(width, height) of the image as the model sees it: Qwen's processor resizes to whole patches and
    reports the patch grid it made (``image_grid_thw``), so the size comes from the processor itself."""
    processor = loaded.processor.image_processor
    grid = processor(images=[image.convert("RGB")], return_tensors="pt")["image_grid_thw"][0]
    patch = int(processor.patch_size)
    return int(grid[2]) * patch, int(grid[1]) * patch
