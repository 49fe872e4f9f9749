"""Batching in the transformers backend: concurrent requests share model calls, and no result depends
on its batch-mates (same bytes alone or in a batch of four)."""

from __future__ import annotations

from pathlib import Path

import anyio
import numpy as np
import pytest
import torch
from PIL import Image

from umni.util.errors import ConfigError
from umni.util.spec import Spec
from umni_adapters import hf_vlm
from umni_adapters.hf import HFBackend

#: Prompts of different token lengths, so a batch needs padding (text) or several length groups (images).
PROMPTS = ["a red cube", "a blue ball on the left of a red cube", "count how many objects are in the image", "yes"]


def backend(folder: Path, **params: str) -> HFBackend:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return HFBackend(Spec.parse(f"hf/{folder}" + (f"?{query}" if query else "")))


def noise(seed: int, size: tuple[int, int] = (36, 36)) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8), mode="RGB")


async def _together(calls):
    """Run the coroutine factories concurrently; their results in order."""
    results: list = [None] * len(calls)

    async def one(index, call):
        results[index] = await call()

    async with anyio.create_task_group() as group:
        for index, call in enumerate(calls):
            group.start_soon(one, index, call)
    return results


def test_janus_images_are_the_same_alone_and_in_a_batch_of_four(janus_dir):
    janus = backend(janus_dir)

    def make(prompt, seed):
        return lambda: janus.generate([prompt], seed=seed)

    alone = [anyio.run(make(prompt, seed)) for seed, prompt in enumerate(PROMPTS)]
    sizes_before = list(janus._loaded.batcher.stats.sizes)
    together = anyio.run(_together, [make(prompt, seed) for seed, prompt in enumerate(PROMPTS)])
    assert janus._loaded.batcher.stats.sizes[len(sizes_before):] == [4]
    assert [reply.image.tobytes() for reply in together] == [reply.image.tobytes() for reply in alone]
    assert [reply.usage for reply in together] == [reply.usage for reply in alone]
    # the seed still matters inside a batch
    assert anyio.run(_together, [make(PROMPTS[0], 0), make(PROMPTS[0], 1)])[0].image.tobytes() == \
        alone[0].image.tobytes()


def test_janus_text_answers_are_the_same_alone_and_in_a_batch(janus_dir):
    janus = backend(janus_dir, batch_size="4")

    def ask(prompt):
        return lambda: janus.respond([prompt], max_tokens=6)

    alone = [anyio.run(ask(prompt)) for prompt in PROMPTS]
    together = anyio.run(_together, [ask(prompt) for prompt in PROMPTS])
    assert [(r.text, r.usage) for r in together] == [(r.text, r.usage) for r in alone]
    assert len({r.usage.input_tokens for r in alone}) == len(PROMPTS)  # the batch really was padded


def test_left_padding_keeps_each_prompts_next_token_logits(vlm_dir):
    """The likelihood chooser reads the last column: with left padding it is each prompt's own next token."""
    vlm = backend(vlm_dir)
    anyio.run(vlm.start)
    loaded = vlm._loaded
    prompts = [([prompt], "") for prompt in PROMPTS]
    with torch.inference_mode():
        batched = loaded.model(**hf_vlm.chat_inputs(loaded, prompts)).logits[:, -1]
        alone = [loaded.model(**hf_vlm.chat_inputs(loaded, [p])).logits[0, -1] for p in prompts]
    for row, single in enumerate(alone):
        torch.testing.assert_close(batched[row], single, rtol=1e-4, atol=1e-5)


def test_vlm_choices_batch_and_match_their_single_answers(vlm_dir):
    likelihood = backend(vlm_dir, mode="likelihood")
    letter = backend(vlm_dir)
    options = ["red", "blue", "green"]
    image = noise(3)

    def choose(model, prompt):
        return lambda: model.choose([image, prompt], options)

    for model in (likelihood, letter):
        alone = [anyio.run(choose(model, prompt)) for prompt in PROMPTS]
        calls_before = model._loaded.batcher.stats.calls
        together = anyio.run(_together, [choose(model, prompt) for prompt in PROMPTS])
        assert model._loaded.batcher.stats.calls == calls_before + 1
        assert together == alone


def test_sampled_text_is_the_same_alone_and_in_a_batch(janus_dir):
    """Each row samples from its own seeded generator: batch-mates never change a sampled reply."""
    janus = backend(janus_dir, temperature="1.5", batch_size="4")

    def ask(prompt, seed):
        return lambda: janus.respond([prompt], max_tokens=6, seed=seed)

    alone = [anyio.run(ask(prompt, seed)) for seed, prompt in enumerate(PROMPTS)]
    sizes_before = len(janus._loaded.batcher.stats.sizes)
    together = anyio.run(_together, [ask(prompt, seed) for seed, prompt in enumerate(PROMPTS)])
    assert janus._loaded.batcher.stats.sizes[sizes_before:] == [4]
    assert [(r.text, r.usage) for r in together] == [(r.text, r.usage) for r in alone]
    # sampling really happens, and follows the seed: one prompt under eight seeds gives several replies
    replies = anyio.run(_together, [ask(PROMPTS[1], seed) for seed in range(8)])
    assert len({r.text for r in replies}) > 1
    assert replies[1].text == alone[1].text


def test_batch_size_is_operational_and_sets_default_concurrency(janus_dir):
    small, large = backend(janus_dir, batch_size="2"), backend(janus_dir, batch_size="16")
    assert small.identity() == large.identity()
    assert (small.concurrency, large.concurrency) == (4, 32)
    assert backend(janus_dir, batch_size="2", concurrency="3").concurrency == 3
    with pytest.raises(ConfigError, match="batch_size"):
        backend(janus_dir, batch_size="0")
