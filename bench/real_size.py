"""Benchmark — real-size throughput of one UMM and one judge through umni's own transformers backend.

Model weights cannot be downloaded here, so each model is *built* from a hand-written config with the
published dimensions (Qwen2.5-VL-7B-Instruct as the judge, Janus-Pro-7B as the unified model), given
random weights, saved with ``save_pretrained`` to a temporary folder with a locally trained tokenizer
and the real image-processor settings, and loaded through the ``hf/<folder>?batch_size=N`` spec like
any local checkpoint. Throughput depends on the architecture and the tensor shapes (prompt length,
image tokens, reply length), not on the weight values, so the figures stand for the real checkpoints;
the replies themselves are noise. Two differences from the real checkpoints are reported, not hidden:
the tokenizer is trained on the benchmark's own prompts (so a prompt is somewhat fewer tokens than the
real BPE would make; ``input_tokens`` is recorded), and random weights never stop a reply early (every
reply runs to its token limit, the worst case).

The backend is driven exactly as the engine drives it: ``respond`` / ``choose`` / ``generate`` called
concurrently, so the backend's micro-batcher joins them into model calls of at most ``batch_size``.
Each measurement is a warm-up batch, then a fixed number of timed rounds (each round: all requests
started at once), cut short once a per-measurement time box is spent. The batch sizes the batcher
actually formed are recorded beside each figure. One model failing (build, load, or a measurement)
is recorded as an error and the others still run.

Run it from the repository root::

    python -m bench.real_size --size tiny                   # CPU smoke test, about a minute on 2 free cores
    python -m bench.real_size --size real --device cuda     # bf16, real dimensions, a GPU with >= 24 GB (peak 19 GiB)

On a GPU machine without internet that has torch, torchvision and transformers (>= 5.24 for Janus
images: under 5.17 umni's Janus generation fails in the KV cache update), with the wheels of
bench/wheels.txt downloaded into .whl/ at the repository root (see that file), run from the
repository root::

    for w in .whl/*.whl; do python -m zipfile -e $w /tmp/site; done && for p in adapters:umni_adapters graphs:umni_graphs cases:umni_cases; do ln -sfn $PWD/${p%%:*} /tmp/site/${p##*:}; done && PYTHONPATH=/tmp/site:$PWD python -m bench.real_size --size real --device cuda --out $OUT/real_size.json

A wheel is a zip archive laid out as site-packages, so unpacking it installs it without pip; the
symlinks give the source tree's ``adapters/``, ``graphs/`` and ``cases/`` their installed import
names, as setup.py maps them, without building or installing umni. (If .whl/ must travel as an
ignored folder under another name, unpack from there instead.)

Measured on 2026-11-26 (one NVIDIA H200, torch 2.11.0+cu130, bf16; transformers 5.17.0 for Qwen and
Janus answers, 5.24.0 for the Janus run with images), items/s at batch 1 -> batch 8 (peak GiB):
Qwen2.5-VL-7B judge reply (457 prompt tokens, 64 new) 0.50 -> 1.95 (16.2); its letter answer
(410 prompt tokens, 16 new) 1.79 -> 5.59 (16.2); Janus-Pro-7B image (576 tokens, CFG) 0.035 ->
0.211 (18.9); its 64-token answer 0.41 -> 1.80 (15.8) under 5.24, 0.64 -> 2.44 (17.4) under 5.17.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SIZES = ("tiny", "real")
BATCH_SIZES = (1, 8)

NOTE = (
    "Architectures at the stated sizes built from hand-written configs with RANDOM weights (no checkpoint can "
    "be downloaded here); throughput and memory depend on architecture and shapes, not on weight values. "
    "Replies are noise and always run to their token limit."
)

# --------------------------------------------------------------------------------------------------
# prompts: what the requests say (every word is one token of the benchmark tokenizer)

_COLOURS = ["red", "blue", "green", "yellow", "purple", "orange", "white", "black"]

JUDGE_PROMPT = (
    "You are a careful judge of generated images. Look at the image and decide how well it follows the "
    "instruction below. Check every object the instruction names, its colour, its count, its position "
    "relative to the other objects, and any text that should be written in the image. Penalise missing "
    "objects, wrong colours, wrong counts and wrong positions; do not reward style or beauty. "
    "Instruction: a {colour} cube on the left of a small ball, with the word hello written below them. "
    "First list what you see, then give a score from 0 to 10 and one sentence of reason."
)
QUESTION = "How many {colour} objects are in the image?"
OPTIONS = ["none", "one", "two", "three"]
DRAW_PROMPT = "a {colour} cube on the left of a small ball, with the word hello written below them"

#: Reply length of the judge's free-text reply (umni's judge replies are a verdict and a reason).
JUDGE_REPLY_TOKENS = 64


@dataclass(frozen=True)
class Shapes:
    """The sizes that decide the cost of a request, per benchmark size."""

    qwen_image_side: int  # the judge's input image (the processor resizes to whole 28-pixel cells)
    janus_image_side: int
    text_rounds: int
    image_rounds: int
    #: Requests per timed round at batch size 1 (at batch 8 a round is one full batch of 8).
    text_requests_at_1: int
    image_requests_at_1: int
    #: A measurement stops adding timed rounds once this many seconds are spent (one always runs).
    budget_seconds: float
    #: Length of every free-text reply (random weights never stop early).
    reply_tokens: int


SHAPES = {
    "tiny": Shapes(56, 32, text_rounds=1, image_rounds=1, text_requests_at_1=2, image_requests_at_1=2,
                   budget_seconds=5.0, reply_tokens=8),
    "real": Shapes(512, 384, text_rounds=2, image_rounds=1, text_requests_at_1=4, image_requests_at_1=2,
                   budget_seconds=60.0, reply_tokens=JUDGE_REPLY_TOKENS),
}


# --------------------------------------------------------------------------------------------------
# building checkpoints from configs


def _corpus() -> list[str]:
    texts = [JUDGE_PROMPT, QUESTION, DRAW_PROMPT, " ".join(OPTIONS), "user assistant system Answer with the letter"]
    return [t.format(colour=c) for t in texts for c in _COLOURS]


def build_tokenizer(special: dict[str, str], chat_template: str) -> Any:
    """A byte-level BPE tokenizer trained on the benchmark's prompts, so each word is about one token.

    Every string still encodes (byte fallback). Ids the model produces beyond this vocabulary decode
    to nothing, which is harmless: only the number of tokens matters here.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = ["<pad>", "<bos>", "<eos>", "<unk>"]
    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=2000, special_tokens=core + list(special.values()),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )
    tokenizer.train_from_iterator(_corpus(), trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>", unk_token="<unk>",
        model_max_length=32768, extra_special_tokens=special,
    )
    fast.chat_template = chat_template
    return fast


def _chat_template(image_marker: str) -> str:
    """Role tags and an image marker where each image sits, like the real templates."""
    return (
        "{% for message in messages %}<|{{ message['role'] }}|>: "
        "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
        "{% for part in message['content'] %}{% if part['type'] == 'image' %}" + image_marker +
        "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}\n"
        "{% endfor %}{% if add_generation_prompt %}<|assistant|>:{% endif %}"
    )


def _pil_class(name: str) -> Any:
    """transformers' PIL image processor where this version has one (no torchvision needed), else the plain one."""
    import transformers

    return getattr(transformers, name + "Pil", None) or getattr(transformers, name)


def _instantiate(model_class: Any, config: Any, device: str, dtype: Any) -> Any:
    """Random weights, created directly on the device in the target dtype (a 7B model initialised on a
    CPU in fp32 would take minutes)."""
    import torch

    torch.manual_seed(0)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            return model_class(config).eval()
    finally:
        torch.set_default_dtype(previous)


_QWEN_SPECIAL = {"vision_start_token": "<|vision_start|>", "vision_end_token": "<|vision_end|>",
                 "image_token": "<|image_pad|>", "video_token": "<|video_pad|>"}


def build_qwen25_vl(folder: Path, size: str, device: str, dtype: Any) -> Path:
    """Qwen2.5-VL-7B-Instruct's published text and vision dimensions (tiny: the smallest that runs)."""
    import transformers

    template = _chat_template("<|vision_start|><|image_pad|><|vision_end|>")
    tokenizer = build_tokenizer(_QWEN_SPECIAL, template)
    ids = {name: tokenizer.convert_tokens_to_ids(token) for name, token in _QWEN_SPECIAL.items()}
    common = {"bos_token_id": tokenizer.bos_token_id, "eos_token_id": tokenizer.eos_token_id,
              "pad_token_id": tokenizer.pad_token_id}
    if size == "real":
        text = {"vocab_size": 152064, "hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28,
                "num_attention_heads": 28, "num_key_value_heads": 4, "max_position_embeddings": 128000,
                "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "tie_word_embeddings": False,
                "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}, **common}
        vision = {"depth": 32, "hidden_size": 1280, "intermediate_size": 3420, "num_heads": 16,
                  "out_hidden_size": 3584, "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2,
                  "window_size": 112, "fullatt_block_indexes": [7, 15, 23, 31], "tokens_per_second": 2,
                  "hidden_act": "silu"}
        pixels = {"min_pixels": 3136, "max_pixels": 12845056}
    else:
        text = {"vocab_size": len(tokenizer), "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
                "num_attention_heads": 2, "num_key_value_heads": 1, "max_position_embeddings": 1024,
                "rope_scaling": {"type": "mrope", "mrope_section": [2, 3, 3]}, **common}
        vision = {"depth": 1, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "out_hidden_size": 32,
                  "patch_size": 14, "spatial_merge_size": 2, "fullatt_block_indexes": [0]}
        pixels = {"min_pixels": 28 * 28, "max_pixels": 56 * 56}
    config = transformers.Qwen2_5_VLConfig(
        text_config=text, vision_config=vision, image_token_id=ids["image_token"],
        video_token_id=ids["video_token"], vision_start_token_id=ids["vision_start_token"],
        vision_end_token_id=ids["vision_end_token"],
    )
    config.architectures = ["Qwen2_5_VLForConditionalGeneration"]
    model = _instantiate(transformers.Qwen2_5_VLForConditionalGeneration, config, device, dtype)
    model.save_pretrained(folder)
    del model
    processing = {**pixels, "patch_size": 14, "merge_size": 2, "temporal_patch_size": 2}
    transformers.Qwen2_5_VLProcessor(
        image_processor=_pil_class("Qwen2VLImageProcessor")(**processing), tokenizer=tokenizer,
        video_processor=transformers.Qwen2VLVideoProcessor(**processing), chat_template=template,
    ).save_pretrained(folder)
    return folder


_JANUS_SPECIAL = {"image_token": "<image_placeholder>", "boi_token": "<begin_of_image>", "eoi_token": "<end_of_image>"}


def build_janus_pro(folder: Path, size: str, device: str, dtype: Any) -> Path:
    """Janus-Pro-7B's published dimensions: a 30-layer 4096-wide LLaMA, a SigLIP-L/16 at 384 pixels, a
    VQ tokenizer with 16,384 codes and 576 image tokens per image (tiny: the test suite's sizes)."""
    import transformers

    template = _chat_template("<image_placeholder>")
    tokenizer = build_tokenizer(_JANUS_SPECIAL, template)
    common = {"bos_token_id": tokenizer.bos_token_id, "eos_token_id": tokenizer.eos_token_id,
              "pad_token_id": tokenizer.pad_token_id}
    if size == "real":
        hidden, side, image_tokens = 4096, 384, 576
        text = transformers.LlamaConfig(
            vocab_size=102400, hidden_size=hidden, intermediate_size=11008, num_hidden_layers=30,
            num_attention_heads=32, num_key_value_heads=32, max_position_embeddings=16384, rms_norm_eps=1e-6,
            **common)
        vision = transformers.JanusVisionConfig(
            hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, image_size=side, patch_size=16,
            mlp_ratio=4.0, projection_dim=hidden, depth=2, num_image_tokens=image_tokens)
        vq = transformers.JanusVQVAEConfig(
            embed_dim=8, num_embeddings=16384, latent_channels=256, base_channels=128,
            channel_multiplier=[1, 1, 2, 2, 4], num_res_blocks=2, projection_dim=hidden, image_token_embed_dim=hidden,
            num_patches=24)
    else:
        hidden, side, image_tokens = 32, 32, 16
        text = transformers.LlamaConfig(
            vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=64, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, **common)
        vision = transformers.JanusVisionConfig(
            hidden_size=32, num_hidden_layers=1, num_attention_heads=2, image_size=side, patch_size=8,
            projection_dim=hidden, num_image_tokens=image_tokens, mlp_ratio=2.0)
        vq = transformers.JanusVQVAEConfig(
            embed_dim=8, num_embeddings=64, latent_channels=32, base_channels=32, channel_multiplier=[1, 2],
            num_res_blocks=1, projection_dim=hidden, image_token_embed_dim=hidden)
    config = transformers.JanusConfig(text_config=text, vision_config=vision, vq_config=vq,
                                      image_token_id=tokenizer.convert_tokens_to_ids("<image_placeholder>"))
    config.architectures = ["JanusForConditionalGeneration"]
    model = _instantiate(transformers.JanusForConditionalGeneration, config, device, dtype)
    model.save_pretrained(folder)
    del model
    transformers.JanusProcessor(
        image_processor=_pil_class("JanusImageProcessor")(size={"height": side, "width": side}),
        tokenizer=tokenizer, chat_template=template, num_image_tokens=image_tokens,
    ).save_pretrained(folder)
    return folder


# --------------------------------------------------------------------------------------------------
# measuring


@dataclass(frozen=True)
class Role:
    """One role method of the backend, as a request maker: (backend, request index) -> awaitable reply."""

    name: str
    what: str
    call: Callable[[Any, int, Any, int], Awaitable[Any]]
    images: bool  # an image-making role (fewer requests at batch 1: each is expensive)


@dataclass(frozen=True)
class ModelCase:
    label: str
    stands_for: str
    build: Callable[[Path, str, str, Any], Path]
    roles: tuple[Role, ...]
    image_side: Callable[[Shapes], int]


def _image(side: int, index: int) -> Any:
    """A deterministic noise picture of the given side (content does not change the cost)."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(index)
    return Image.fromarray(rng.integers(0, 256, (side, side, 3), dtype=np.uint8), mode="RGB")


async def _judge(backend: Any, i: int, image: Any, tokens: int) -> Any:
    return await backend.respond([image, JUDGE_PROMPT.format(colour=_COLOURS[i % 8])], max_tokens=tokens)


async def _choose(backend: Any, i: int, image: Any, tokens: int) -> Any:
    return await backend.choose([image, QUESTION.format(colour=_COLOURS[i % 8])], OPTIONS)


async def _answer(backend: Any, i: int, image: Any, tokens: int) -> Any:
    return await backend.respond([image, QUESTION.format(colour=_COLOURS[i % 8])], max_tokens=tokens)


async def _draw(backend: Any, i: int, image: Any, tokens: int) -> Any:
    return await backend.generate([DRAW_PROMPT.format(colour=_COLOURS[i % 8])], seed=i)


CASES = (
    ModelCase(
        "qwen2.5-vl-7b", "Qwen/Qwen2.5-VL-7B-Instruct (architecture and sizes; random weights)", build_qwen25_vl,
        (Role("judge", "respond: image + judge prompt, free-text reply (64 tokens; tiny: 8)", _judge, False),
         Role("answer", "choose: image + 4-option question, letter mode (16-token reply)", _choose, False)),
        lambda s: s.qwen_image_side,
    ),
    ModelCase(
        "janus-pro-7b", "deepseek-community/Janus-Pro-7B (architecture and sizes; random weights)", build_janus_pro,
        (Role("generate", "generate: one image from a text prompt (all image tokens, CFG 5)", _draw, True),
         Role("answer", "respond: image + question, free-text reply (64 tokens; tiny: 8)", _answer, False)),
        lambda s: s.janus_image_side,
    ),
)


@dataclass
class Clock:
    """The whole run's time box: measurements that would start after it are skipped, not run."""

    deadline: float
    started: float = field(default_factory=time.perf_counter)

    def left(self) -> float:
        return self.deadline - (time.perf_counter() - self.started)


def _cuda(device: str) -> bool:
    return device.startswith("cuda")


def _gib(n: int) -> float:
    return round(n / 2**30, 3)


def measure(backend: Any, role: Role, batch_size: int, shapes: Shapes, image: Any, device: str) -> dict[str, Any]:
    """Warm-up, then timed rounds of concurrent requests through the backend's micro-batcher."""
    import anyio
    import torch

    per_round = batch_size if batch_size > 1 else (
        shapes.image_requests_at_1 if role.images else shapes.text_requests_at_1)
    rounds = shapes.image_rounds if role.images else shapes.text_rounds

    async def one_round(count: int, offset: int) -> list[Any]:
        replies: list[Any] = [None] * count

        async def one(i: int) -> None:
            replies[i] = await role.call(backend, offset + i, image, shapes.reply_tokens)

        async with anyio.create_task_group() as group:
            for i in range(count):
                group.start_soon(one, i)
        return replies

    if _cuda(device):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    anyio.run(one_round, batch_size, 0)  # warm-up: one full batch (kernels, allocator, lazy init)
    batcher = backend._loaded.batcher
    formed_before = len(batcher.stats.sizes)
    seconds: list[float] = []
    replies: list[Any] = []
    spent = 0.0
    while len(seconds) < rounds and (not seconds or spent < shapes.budget_seconds):
        started = time.perf_counter()
        replies += anyio.run(one_round, per_round, 100 * (len(seconds) + 1))
        if _cuda(device):
            torch.cuda.synchronize()
        seconds.append(time.perf_counter() - started)
        spent += seconds[-1]
    items = per_round * len(seconds)
    usages = [getattr(r, "usage", None) for r in replies]
    out_tokens = [u.output_tokens for u in usages if u is not None and u.output_tokens is not None]
    in_tokens = [u.input_tokens for u in usages if u is not None and u.input_tokens is not None]
    result: dict[str, Any] = {
        "role": role.name, "what": role.what, "batch_size": batch_size, "requests_per_round": per_round,
        "rounds": len(seconds), "items": items, "seconds": round(sum(seconds), 4),
        "items_per_second": round(items / sum(seconds), 4),
        "seconds_per_round": [round(s, 4) for s in seconds],
        "batch_sizes_formed": batcher.stats.sizes[formed_before:],
        "input_tokens_mean": round(sum(in_tokens) / len(in_tokens), 1) if in_tokens else None,
        "output_tokens_mean": round(sum(out_tokens) / len(out_tokens), 1) if out_tokens else None,
    }
    if _cuda(device):
        result["peak_memory_gib"] = _gib(torch.cuda.max_memory_allocated())
    return result


def run_case(case: ModelCase, size: str, device: str, workdir: Path, clock: Clock) -> dict[str, Any]:
    """Build, load and measure one model; every failure lands in the record, never escapes."""
    import anyio
    import torch

    from umni.util.spec import Spec
    from umni_adapters import hf_loading
    from umni_adapters.hf import HFBackend

    shapes = SHAPES[size]
    record: dict[str, Any] = {"model": case.label, "stands_for": case.stands_for, "measurements": []}
    dtype_name = "bf16" if _cuda(device) else "fp32"
    dtype = torch.bfloat16 if _cuda(device) else torch.float32
    folder = workdir / case.label
    backends: list[Any] = []
    try:
        started = time.perf_counter()
        case.build(folder, size, device, dtype)
        gc.collect()
        if _cuda(device):
            torch.cuda.empty_cache()
        record["build_and_save_seconds"] = round(time.perf_counter() - started, 2)
        record["checkpoint_gib"] = _gib(sum(p.stat().st_size for p in folder.iterdir() if p.is_file()))
        started = time.perf_counter()
        for batch_size in BATCH_SIZES:
            spec = Spec.parse(f"hf/{folder}?batch_size={batch_size}&device={device}&dtype={dtype_name}")
            backends.append(HFBackend(spec))
        anyio.run(backends[0].start)  # both specs name one checkpoint: one load, shared
        for backend in backends[1:]:
            anyio.run(backend.start)
        record["load_seconds"] = round(time.perf_counter() - started, 2)
        model = backends[0]._loaded.model
        record["parameters"] = sum(p.numel() for p in model.parameters())
        record["dtype"] = backends[0].dtype
        if _cuda(device):
            record["weights_memory_gib"] = _gib(torch.cuda.memory_allocated())
    except Exception as exc:  # noqa: BLE001 - recorded, and the next model still runs
        record["error"] = f"build/load: {_describe(exc)}"
        record["traceback"] = _innermost_traceback(exc)
        backends = []
    image = _image(case.image_side(shapes), 0)
    for role in case.roles if backends else ():
        for backend in backends:
            batch_size = backend.batch_size
            if clock.left() <= 0:
                record["measurements"].append({"role": role.name, "batch_size": batch_size, "skipped": "time box spent"})
                continue
            try:
                entry = measure(backend, role, batch_size, shapes, image, device)
            except Exception as exc:  # noqa: BLE001 - recorded, the other measurements still run
                entry = {"role": role.name, "batch_size": batch_size, "error": _describe(exc),
                         "traceback": _innermost_traceback(exc)}
            record["measurements"].append(entry)
            _print_row(case.label, entry)
        speedup = _speedup(record["measurements"], role.name)
        if speedup is not None:
            record.setdefault("batch8_over_batch1", {})[role.name] = speedup
    for backend in backends:
        anyio.run(backend.aclose)
    hf_loading.clear_cache()
    gc.collect()
    if _cuda(device):
        torch.cuda.empty_cache()
    shutil.rmtree(folder, ignore_errors=True)
    return record


def _describe(exc: BaseException) -> str:
    """The first underlying error (a task group wraps each request's error in an ExceptionGroup)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"


def _innermost_traceback(exc: BaseException) -> str:
    """The frames where the underlying error was raised (the model call, in a worker thread)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return "".join(traceback.format_exception(exc))[-4000:]


def _speedup(measurements: list[dict[str, Any]], role: str) -> float | None:
    rates = {m["batch_size"]: m.get("items_per_second") for m in measurements if m["role"] == role}
    if rates.get(1) and rates.get(8):
        return round(rates[8] / rates[1], 3)
    return None


def _print_row(model: str, entry: dict[str, Any]) -> None:
    if "items_per_second" in entry:
        memory = f"{entry['peak_memory_gib']:8.2f}" if "peak_memory_gib" in entry else "       -"
        print(f"{model:<15} {entry['role']:<9} {entry['batch_size']:>5} {entry['items']:>5} {entry['seconds']:>9.3f} "
              f"{entry['items_per_second']:>9.3f} {memory}  batches={entry['batch_sizes_formed']}", flush=True)
    else:
        print(f"{model:<15} {entry['role']:<9} {entry['batch_size']:>5}  {entry.get('error') or entry.get('skipped')}",
              flush=True)


def machine(device: str) -> dict[str, Any]:
    import torch
    import transformers

    info: dict[str, Any] = {
        "python": platform.python_version(), "platform": platform.platform(), "torch": torch.__version__,
        "transformers": transformers.__version__, "device": device, "cpu_count": os.cpu_count(),
    }
    if _cuda(device):
        info["device_name"] = torch.cuda.get_device_name()
        info["cuda"] = torch.version.cuda
        info["device_memory_gib"] = _gib(torch.cuda.get_device_properties(0).total_memory)
    else:
        info["device_name"] = platform.processor() or "cpu"
    return info


def run(size: str, device: str, *, out: Path | None, time_limit: float, only: list[str] | None = None) -> dict[str, Any]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    import transformers.utils.logging

    transformers.utils.logging.disable_progress_bar()
    transformers.utils.logging.set_verbosity_error()
    clock = Clock(time_limit)
    report: dict[str, Any] = {"name": "real_size", "size": size, "note": NOTE, "machine": machine(device),
                              "models": []}
    print(NOTE)
    print(f"device: {report['machine']['device_name']}  torch {report['machine']['torch']}  "
          f"transformers {report['machine']['transformers']}")
    print(f"{'model':<15} {'role':<9} {'batch':>5} {'items':>5} {'seconds':>9} {'items/s':>9} {'peak GiB':>8}")
    with tempfile.TemporaryDirectory(prefix="umni-real-size-") as tmp:
        for case in CASES:
            if only and case.label not in only:
                continue
            record = run_case(case, size, device, Path(tmp), clock)
            if "error" in record:
                print(f"{case.label}: {record['error']}", flush=True)
            report["models"].append(record)
            report["seconds_to_run"] = round(time.perf_counter() - clock.started, 2)
            if out is not None:  # written after every model, so a run cut short keeps what it measured
                out.write_text(json.dumps(report, indent=2))
    for record in report["models"]:
        for role, ratio in record.get("batch8_over_batch1", {}).items():
            print(f"{record['model']} {role}: batch 8 gives {ratio}x the items/s of batch 1")
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.real_size", description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=SIZES, default="tiny")
    parser.add_argument("--device", default=None, help="cuda or cpu (default: cuda when present)")
    parser.add_argument("--out", type=Path, default=None, help="write the JSON report here")
    parser.add_argument("--time-limit", type=float, default=None,
                        help="seconds after which remaining measurements are skipped (default 90 tiny, 420 real)")
    parser.add_argument("--only", default=None, help="comma-separated model labels to run")
    args = parser.parse_args(argv)
    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    limit = args.time_limit if args.time_limit is not None else (90.0 if args.size == "tiny" else 420.0)
    only = args.only.split(",") if args.only else None
    report = run(args.size, device, out=args.out, time_limit=limit, only=only)
    failed = [r["model"] for r in report["models"] if "error" in r or any("error" in m for m in r["measurements"])]
    if failed:
        print(f"failures in: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
