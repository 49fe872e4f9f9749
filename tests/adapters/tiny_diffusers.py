"""Tiny diffusers pipelines built from configs with random weights, for offline tests.

The pipelines are saved with ``save_pretrained`` so that tests load them through the same
``from_pretrained`` path a real model directory takes. Sizes are chosen to run in well under a
second per call on a CPU: a VAE that halves the resolution, a two-level UNet with 16/32 channels
and a two-layer CLIP text encoder over a byte-level vocabulary of about 520 tokens.
"""

from __future__ import annotations

import json
from pathlib import Path

#: Image side the tiny pipelines produce by default (UNet sample size times the VAE factor of 2).
DEFAULT_SIDE = 32


def _byte_characters() -> list[str]:
    """The 256 printable stand-ins CLIP's byte-level BPE uses for raw bytes (the GPT-2 table)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
    printable += list(range(ord("®"), ord("ÿ") + 1))
    chars = [chr(b) for b in printable]
    extra = 0
    for byte in range(256):
        if byte not in printable:
            chars.append(chr(256 + extra))
            extra += 1
    return chars


def write_clip_tokenizer(directory: Path) -> Path:
    """Write a CLIP tokenizer with a byte-level vocabulary and a handful of merges.

    Every byte (alone and as a word end ``</w>``) is in the vocabulary, so any prompt tokenizes;
    the few merges only make common English letter pairs single tokens.
    """
    from transformers import CLIPTokenizer

    directory.mkdir(parents=True, exist_ok=True)
    tokens = ["<|startoftext|>", "<|endoftext|>"]
    for char in _byte_characters():
        tokens += [char, char + "</w>"]
    merges = [("t", "h"), ("th", "e</w>"), ("a", "n"), ("o", "n</w>"), ("r", "e")]
    for left, right in merges:
        tokens.append(left + right)
    vocab = {token: index for index, token in enumerate(tokens)}
    (directory / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    merge_lines = ["#version: 0.2"] + [f"{left} {right}" for left, right in merges]
    (directory / "merges.txt").write_text("\n".join(merge_lines) + "\n", encoding="utf-8")
    tokenizer = CLIPTokenizer(
        vocab=str(directory / "vocab.json"), merges=str(directory / "merges.txt"), model_max_length=77
    )
    tokenizer.save_pretrained(directory)
    return directory


def _components(unet_in_channels: int, tmp_dir: Path) -> dict:
    import torch
    from diffusers import AutoencoderKL, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTokenizer

    torch.manual_seed(0)
    unet = UNet2DConditionModel(
        sample_size=DEFAULT_SIDE // 2,
        in_channels=unet_in_channels,
        out_channels=4,
        block_out_channels=(16, 32),
        layers_per_block=1,
        norm_num_groups=8,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        cross_attention_dim=32,
        attention_head_dim=8,
    )
    vae = AutoencoderKL(
        in_channels=3,
        out_channels=3,
        block_out_channels=(16, 32),
        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"),
        latent_channels=4,
        norm_num_groups=8,
        layers_per_block=1,
        sample_size=DEFAULT_SIDE,
    )
    tokenizer = CLIPTokenizer.from_pretrained(write_clip_tokenizer(tmp_dir / "tokenizer-src"))
    text_config = CLIPTextConfig(
        bos_token_id=0,
        eos_token_id=1,
        pad_token_id=1,
        hidden_size=32,
        intermediate_size=37,
        num_attention_heads=4,
        num_hidden_layers=2,
        vocab_size=len(tokenizer),
        max_position_embeddings=77,
    )
    text_encoder = CLIPTextModel(text_config)
    return {"unet": unet, "vae": vae, "text_encoder": text_encoder, "tokenizer": tokenizer}


def build_tiny_sd(directory: Path) -> Path:
    """A Stable Diffusion text-to-image pipeline (DDIM scheduler) saved to ``directory``."""
    from diffusers import DDIMScheduler, StableDiffusionPipeline

    parts = _components(unet_in_channels=4, tmp_dir=directory.parent / (directory.name + "-work"))
    scheduler = DDIMScheduler(
        beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", clip_sample=False, set_alpha_to_one=False,
        steps_offset=1,
    )
    pipe = StableDiffusionPipeline(
        **parts, scheduler=scheduler, safety_checker=None, feature_extractor=None, requires_safety_checker=False
    )
    pipe.save_pretrained(directory)
    return directory


def build_tiny_ip2p(directory: Path) -> Path:
    """An InstructPix2Pix editing pipeline (ancestral Euler scheduler, so every step draws noise)."""
    from diffusers import EulerAncestralDiscreteScheduler, StableDiffusionInstructPix2PixPipeline

    parts = _components(unet_in_channels=8, tmp_dir=directory.parent / (directory.name + "-work"))
    scheduler = EulerAncestralDiscreteScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear")
    pipe = StableDiffusionInstructPix2PixPipeline(
        **parts, scheduler=scheduler, safety_checker=None, feature_extractor=None, requires_safety_checker=False
    )
    pipe.save_pretrained(directory)
    return directory
