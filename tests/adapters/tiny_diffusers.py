"""Tiny diffusers pipelines built from configs with random weights, for offline tests (SD, InstructPix2Pix,
FLUX.1 text-to-image, Kontext and Fill, Qwen-Image text-to-image).

The pipelines are saved with ``save_pretrained`` so that tests load them through the same
``from_pretrained`` path a real model directory takes. Sizes are chosen to run in well under a
second per call on a CPU: for Stable Diffusion a VAE that halves the resolution, a two-level UNet
with 16/32 channels and a two-layer CLIP text encoder over a byte-level vocabulary of about 520
tokens; for FLUX the real channel arithmetic (16 latent channels, 8x VAE, 2x2 packing) around a
one-block transformer and tiny CLIP and T5 encoders; for Qwen-Image a two-layer Qwen2.5-VL.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

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


def tiny_clip_text(tokenizer_dir: Path) -> tuple[Any, Any]:
    """A local CLIP tokenizer and a two-layer random CLIP text encoder sized to it."""
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTokenizer

    tokenizer = CLIPTokenizer.from_pretrained(write_clip_tokenizer(tokenizer_dir))
    config = CLIPTextConfig(
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
    return tokenizer, CLIPTextModel(config)


def backend(path: Path, **params: Any) -> Any:
    """A DiffusersBackend for a tiny pipeline folder, with spec parameters."""
    from umni.util.spec import Spec
    from umni_adapters.diffusion import DiffusersBackend

    query = "&".join(f"{key}={value}" for key, value in params.items())
    return DiffusersBackend(Spec.parse(f"diffusers/{path}" + (f"?{query}" if query else "")))


def started(path: Path, **params: Any) -> Any:
    import anyio

    made = backend(path, **params)
    anyio.run(made.start)
    return made


def concurrently(calls: Sequence[Callable[[], Awaitable[Any]]], *, catch: tuple[type[BaseException], ...] = ()) -> list[Any]:
    """Await the calls as concurrent requests (as the engine's task group sends them), in order.

    Exceptions of the `catch` types are returned in place of a result; others propagate.
    """
    import anyio

    results: list[Any] = [None] * len(calls)

    async def one(index: int) -> None:
        try:
            results[index] = await calls[index]()
        except catch as exc:
            results[index] = exc

    async def main() -> None:
        async with anyio.create_task_group() as group:
            for index in range(len(calls)):
                group.start_soon(one, index)

    anyio.run(main)
    return results


def png(image: Any) -> bytes:
    import io

    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def pixels(image: Any) -> Any:
    import numpy as np

    return np.asarray(image, dtype=np.int16)


def _components(unet_in_channels: int, tmp_dir: Path) -> dict:
    import torch
    from diffusers import AutoencoderKL, UNet2DConditionModel

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
    tokenizer, text_encoder = tiny_clip_text(tmp_dir / "tokenizer-src")
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
    from diffusers import (
        EulerAncestralDiscreteScheduler,
        StableDiffusionInstructPix2PixPipeline,
    )

    parts = _components(unet_in_channels=8, tmp_dir=directory.parent / (directory.name + "-work"))
    scheduler = EulerAncestralDiscreteScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear")
    pipe = StableDiffusionInstructPix2PixPipeline(
        **parts, scheduler=scheduler, safety_checker=None, feature_extractor=None, requires_safety_checker=False
    )
    pipe.save_pretrained(directory)
    return directory


# --------------------------------------------------------------------------------------------------
# FLUX.1 family: CLIP + T5 text encoders, a 16-channel VAE, a packed-latent transformer

#: The FLUX.1 VAE's latent statistics; the pipelines normalise latents with them, so they are kept.
FLUX_VAE_SCALING = 0.3611
FLUX_VAE_SHIFT = 0.1159
#: Latent channels of the FLUX.1 VAE; the transformer sees them packed in 2x2 patches (times 4).
FLUX_LATENT_CHANNELS = 16
#: Four VAE levels give FLUX's 8x downsampling. It matters for Kontext, which resizes every reference
#: image to about a megapixel before encoding it: at 8x that is 4096 reference tokens, at 2x 65536.
FLUX_VAE_LEVELS = 4
FLUX_VAE_FACTOR = 2 ** (FLUX_VAE_LEVELS - 1)


def write_t5_tokenizer(directory: Path) -> Path:
    """Write a T5 (Unigram, SentencePiece-style) tokenizer over letters, digits and a few words.

    T5's tokenizer has a pad, an end-of-sequence and an unknown token first; each word is split on
    whitespace and marked with a leading ``▁``. Letters with and without the marker make every
    lowercase ASCII word encodable; anything else becomes ``<unk>``, which is fine for a random model.
    """
    from transformers import T5TokenizerFast

    directory.mkdir(parents=True, exist_ok=True)
    pieces: list[tuple[str, float]] = [("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), ("▁", -2.0)]
    for char in "abcdefghijklmnopqrstuvwxyz0123456789":
        pieces += [(char, -5.0), ("▁" + char, -5.5)]
    for word in ("the", "a", "red", "blue", "cube", "sky", "sea", "make", "it", "add", "hat", "night", "apple"):
        pieces.append(("▁" + word, -3.0))
    tokenizer = T5TokenizerFast(vocab=pieces, extra_ids=0, model_max_length=512)
    tokenizer.save_pretrained(directory)
    return directory


def _flux_components(transformer_in_channels: int, tmp_dir: Path) -> dict:
    """Components every FLUX.1 pipeline class takes; only the transformer's input width differs."""
    import torch
    from diffusers import (
        AutoencoderKL,
        FlowMatchEulerDiscreteScheduler,
        FluxTransformer2DModel,
    )
    from transformers import (
        T5Config,
        T5EncoderModel,
        T5TokenizerFast,
    )

    torch.manual_seed(0)
    transformer = FluxTransformer2DModel(
        patch_size=1,
        in_channels=transformer_in_channels,
        out_channels=4 * FLUX_LATENT_CHANNELS,  # a prediction for the packed noisy latents only
        num_layers=1,
        num_single_layers=1,
        attention_head_dim=16,
        num_attention_heads=2,
        joint_attention_dim=32,  # the T5 hidden size
        pooled_projection_dim=32,  # the CLIP hidden size
        guidance_embeds=True,  # as FLUX.1-dev, Fill and Kontext: guidance is an input, not two passes
        axes_dims_rope=(4, 4, 8),  # sums to attention_head_dim
    )
    vae = AutoencoderKL(
        in_channels=3,
        out_channels=3,
        block_out_channels=(8,) * FLUX_VAE_LEVELS,
        down_block_types=("DownEncoderBlock2D",) * FLUX_VAE_LEVELS,
        up_block_types=("UpDecoderBlock2D",) * FLUX_VAE_LEVELS,
        latent_channels=FLUX_LATENT_CHANNELS,
        norm_num_groups=4,
        layers_per_block=1,
        sample_size=DEFAULT_SIDE,
        scaling_factor=FLUX_VAE_SCALING,
        shift_factor=FLUX_VAE_SHIFT,
        use_quant_conv=False,
        use_post_quant_conv=False,
        mid_block_add_attention=False,  # self-attention over a megapixel reference's latents is too slow
    )
    tokenizer, text_encoder = tiny_clip_text(tmp_dir / "clip-tokenizer-src")
    tokenizer_2 = T5TokenizerFast.from_pretrained(write_t5_tokenizer(tmp_dir / "t5-tokenizer-src"))
    text_encoder_2 = T5EncoderModel(
        T5Config(
            vocab_size=len(tokenizer_2),
            d_model=32,
            d_kv=8,
            d_ff=37,
            num_layers=1,
            num_heads=4,
            relative_attention_num_buckets=8,
            pad_token_id=0,
            eos_token_id=1,
        )
    )
    return {
        "transformer": transformer,
        "vae": vae,
        "text_encoder": text_encoder,
        "tokenizer": tokenizer,
        "text_encoder_2": text_encoder_2,
        "tokenizer_2": tokenizer_2,
        "scheduler": FlowMatchEulerDiscreteScheduler(shift=3.0, use_dynamic_shifting=True),
    }


def _save(pipe, directory: Path) -> Path:
    pipe.save_pretrained(directory)
    return directory


def _work_dir(directory: Path) -> Path:
    return directory.parent / (directory.name + "-work")


def build_tiny_flux(directory: Path) -> Path:
    """A FLUX.1 text-to-image pipeline: the transformer sees the packed noisy latents only."""
    from diffusers import FluxPipeline

    packed = 4 * FLUX_LATENT_CHANNELS
    return _save(FluxPipeline(**_flux_components(packed, _work_dir(directory))), directory)


def build_tiny_flux_kontext(directory: Path) -> Path:
    """A FLUX.1 Kontext pipeline: same widths as text-to-image, the reference rides along as tokens."""
    from diffusers import FluxKontextPipeline

    packed = 4 * FLUX_LATENT_CHANNELS
    return _save(FluxKontextPipeline(**_flux_components(packed, _work_dir(directory))), directory)


def build_tiny_flux_fill(directory: Path) -> Path:
    """A FLUX.1 Fill pipeline.

    Fill concatenates, per packed token, the noisy latents (4 x 16), the masked image's latents
    (4 x 16) and the mask at pixel resolution folded into the token (4 x factor x factor values: each
    latent pixel covers factor x factor image pixels, and a token packs 2 x 2 latent pixels). With
    the real 8x VAE that is 64 + 64 + 256 = 384, the real model's input width.
    """
    from diffusers import FluxFillPipeline

    packed = 4 * FLUX_LATENT_CHANNELS
    in_channels = packed + packed + 4 * FLUX_VAE_FACTOR * FLUX_VAE_FACTOR
    return _save(FluxFillPipeline(**_flux_components(in_channels, _work_dir(directory))), directory)


# --------------------------------------------------------------------------------------------------
# Qwen-Image text-to-image: a Qwen2.5-VL language model reads the prompt; no image processor involved

#: Chat-format markers Qwen-Image's prompt template uses, plus the vision markers the VL config names.
_QWEN_SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>")


def write_qwen2_tokenizer(directory: Path) -> Path:
    """Write a Qwen2 byte-level BPE tokenizer with no merges: every byte is a token, so any text encodes.

    The pipeline wraps each prompt in a fixed chat template and drops the template's first 34 tokens
    (their count under the real vocabulary); byte-level tokens make the template far longer than
    that, so the prompt's own tokens always survive the cut.
    """
    from transformers import Qwen2Tokenizer

    directory.mkdir(parents=True, exist_ok=True)
    vocab = {char: index for index, char in enumerate(_byte_characters())}
    for special in _QWEN_SPECIALS:
        vocab[special] = len(vocab)
    tokenizer = Qwen2Tokenizer(vocab=vocab, merges=[], model_max_length=2048)
    tokenizer.add_special_tokens({"additional_special_tokens": list(_QWEN_SPECIALS[1:])})
    tokenizer.save_pretrained(directory)
    return directory


def build_tiny_qwen_image(directory: Path) -> Path:
    """A Qwen-Image text-to-image pipeline with a two-layer Qwen2.5-VL text encoder and a 4x VAE."""
    import torch
    from diffusers import (
        AutoencoderKLQwenImage,
        FlowMatchEulerDiscreteScheduler,
        QwenImagePipeline,
        QwenImageTransformer2DModel,
    )
    from transformers import (
        Qwen2_5_VLConfig,
        Qwen2_5_VLForConditionalGeneration,
        Qwen2Tokenizer,
    )

    tokenizer = Qwen2Tokenizer.from_pretrained(write_qwen2_tokenizer(_work_dir(directory) / "qwen-tokenizer-src"))
    ids = {token: tokenizer.convert_tokens_to_ids(token) for token in _QWEN_SPECIALS}
    latent_channels = 4
    torch.manual_seed(0)
    transformer = QwenImageTransformer2DModel(
        patch_size=2,
        in_channels=4 * latent_channels,  # 2x2 packed latents
        out_channels=latent_channels,
        num_layers=1,
        attention_head_dim=16,
        num_attention_heads=2,
        joint_attention_dim=16,  # the text encoder's hidden size
        guidance_embeds=False,
        axes_dims_rope=(8, 4, 4),  # sums to attention_head_dim
    )
    vae = AutoencoderKLQwenImage(
        base_dim=24,
        z_dim=latent_channels,
        dim_mult=[1, 2, 4],
        num_res_blocks=1,
        temperal_downsample=[False, True],  # two spatial halvings: 4x
        latents_mean=[0.0] * latent_channels,
        latents_std=[1.0] * latent_channels,
    )
    text_config = {
        "hidden_size": 16,
        "intermediate_size": 16,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "num_key_value_heads": 2,
        "vocab_size": len(tokenizer),
        "bos_token_id": None,
        "eos_token_id": ids["<|im_end|>"],
        "pad_token_id": ids["<|endoftext|>"],
        "rope_scaling": {"mrope_section": [1, 1, 2], "rope_type": "default", "type": "default"},
        "rope_theta": 1000000.0,
    }
    vision_config = {"depth": 1, "hidden_size": 16, "intermediate_size": 16, "num_heads": 2, "out_hidden_size": 16}
    config = Qwen2_5_VLConfig(
        text_config=text_config,
        vision_config=vision_config,
        vocab_size=len(tokenizer),
        hidden_size=16,
        bos_token_id=None,
        eos_token_id=ids["<|im_end|>"],
        pad_token_id=ids["<|endoftext|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|image_pad|>"],
    )
    text_encoder = Qwen2_5_VLForConditionalGeneration(config).eval()
    pipe = QwenImagePipeline(
        transformer=transformer,
        vae=vae,
        text_encoder=text_encoder,
        tokenizer=tokenizer,
        scheduler=FlowMatchEulerDiscreteScheduler(shift=3.0, use_dynamic_shifting=True),
    )
    return _save(pipe, directory)


_CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def build_tiny_flux2_klein(directory: Path) -> Path:
    """A FLUX.2 [klein] pipeline: Qwen3 text encoder (28 layers, as the pipeline reads layers 9, 18
    and 27), a 2x2-patched VAE and a one-block transformer; it draws, and edits with reference images."""
    import torch
    from diffusers import (
        AutoencoderKLFlux2,
        FlowMatchEulerDiscreteScheduler,
        Flux2KleinPipeline,
        Flux2Transformer2DModel,
    )
    from transformers import Qwen2Tokenizer, Qwen3Config, Qwen3ForCausalLM

    tokenizer = Qwen2Tokenizer.from_pretrained(write_qwen2_tokenizer(_work_dir(directory) / "qwen-tokenizer-src"))
    tokenizer.chat_template = _CHAT_TEMPLATE
    hidden = 8
    torch.manual_seed(0)
    text_encoder = Qwen3ForCausalLM(
        Qwen3Config(
            hidden_size=hidden,
            intermediate_size=16,
            num_hidden_layers=28,
            num_attention_heads=2,
            num_key_value_heads=2,
            head_dim=4,
            vocab_size=len(tokenizer),
            pad_token_id=tokenizer.convert_tokens_to_ids("<|endoftext|>"),
        )
    ).eval()
    latent_channels = 4
    vae = AutoencoderKLFlux2(
        block_out_channels=(8, 8),
        down_block_types=("DownEncoderBlock2D",) * 2,
        up_block_types=("UpDecoderBlock2D",) * 2,
        layers_per_block=1,
        latent_channels=latent_channels,
        norm_num_groups=4,
        sample_size=32,
    )
    transformer = Flux2Transformer2DModel(
        in_channels=4 * latent_channels,  # latents patched 2x2
        num_layers=1,
        num_single_layers=1,
        attention_head_dim=16,
        num_attention_heads=2,
        joint_attention_dim=3 * hidden,  # three text encoder layers stacked
        timestep_guidance_channels=16,
        axes_dims_rope=(4, 4, 4, 4),
        guidance_embeds=False,
    )
    pipe = Flux2KleinPipeline(
        scheduler=FlowMatchEulerDiscreteScheduler(),
        vae=vae,
        text_encoder=text_encoder,
        tokenizer=tokenizer,
        transformer=transformer,
    )
    return _save(pipe, directory)


def build_tiny_hunyuan_image(directory: Path) -> Path:
    """A HunyuanImage-2.1 pipeline: the tiny Qwen-Image's Qwen2.5-VL text encoder and tokenizer, a
    one-layer ByT5-style T5 encoder for quoted glyph text, a 4x VAE and a one-block transformer."""
    import torch
    from diffusers import (
        AutoencoderKLHunyuanImage,
        FlowMatchEulerDiscreteScheduler,
        HunyuanImagePipeline,
        HunyuanImageTransformer2DModel,
        QwenImagePipeline,
    )
    from transformers import ByT5Tokenizer, T5Config, T5EncoderModel

    qwen = QwenImagePipeline.from_pretrained(build_tiny_qwen_image(_work_dir(directory) / "qwen-image"))
    torch.manual_seed(0)
    vae = AutoencoderKLHunyuanImage(
        in_channels=3,
        out_channels=3,
        latent_channels=4,
        block_out_channels=(32, 32, 32),  # 32: its GroupNorms have 32 groups; three blocks: 4x
        layers_per_block=1,
        spatial_compression_ratio=4,
        sample_size=32,
        scaling_factor=1.0,
    )
    transformer = HunyuanImageTransformer2DModel(
        in_channels=4,
        out_channels=4,
        num_attention_heads=2,
        attention_head_dim=16,
        num_layers=1,
        num_single_layers=1,
        num_refiner_layers=1,
        text_embed_dim=16,  # the Qwen2.5-VL encoder's hidden size
        text_embed_2_dim=8,  # the T5 encoder's
        rope_axes_dim=(8, 8),
    )
    byt5 = T5EncoderModel(T5Config(d_model=8, d_kv=4, d_ff=16, num_layers=1, num_heads=2, vocab_size=384)).eval()
    pipe = HunyuanImagePipeline(
        scheduler=FlowMatchEulerDiscreteScheduler(shift=3.0),
        vae=vae,
        text_encoder=qwen.text_encoder,
        tokenizer=qwen.tokenizer,
        text_encoder_2=byt5,
        tokenizer_2=ByT5Tokenizer(),
        transformer=transformer,
    )
    return _save(pipe, directory)
