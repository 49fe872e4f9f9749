"""Tiny random diffusers pipelines for the families tests/adapters did not build: SDXL, Qwen-Image-Edit
and -Edit-Plus, LongCat-Image and -Edit, Qwen-Image 2.1, OmniGen.

Each is saved with ``save_pretrained`` and loaded back by the backend through ``from_pretrained``,
as a downloaded checkpoint would be. Text encoders are the smallest the pipeline's own arithmetic
allows; VAEs downsample as much as the class expects (edit classes resize every input to a
megapixel before encoding it, so a deep VAE keeps that cheap on a CPU).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from tests.adapters import tiny_diffusers as td


def _qwen_vl_processor(tokenizer: Any, cls_name: str = "Qwen2VLProcessor") -> Any:
    """The vision-language processor edit pipelines feed condition images through, kept to 4 patches."""
    import transformers

    small = {"min_pixels": 28 * 28, "max_pixels": 56 * 56, "patch_size": 14, "merge_size": 2}
    return getattr(transformers, cls_name)(
        image_processor=transformers.Qwen2VLImageProcessor(**small), tokenizer=tokenizer,
        video_processor=transformers.Qwen2VLVideoProcessor(**small), chat_template=td._CHAT_TEMPLATE,
    )


def _qwen_image_parts(directory: Path) -> Any:
    """The tiny Qwen-Image text-to-image pipeline, whose text encoder, tokenizer and transformer the
    edit classes share (they differ in how images reach the encoder, not in module shapes)."""
    from diffusers import QwenImagePipeline

    return QwenImagePipeline.from_pretrained(td.build_tiny_qwen_image(td._work_dir(directory) / "qwen-image"))


def _qwen_vae_16x() -> Any:
    """Qwen-Image's causal VAE with four halvings: a megapixel reference is 64x64 latents, not 256x256."""
    from diffusers import AutoencoderKLQwenImage

    torch.manual_seed(0)
    return AutoencoderKLQwenImage(base_dim=8, z_dim=4, dim_mult=[1, 1, 1, 1, 1], num_res_blocks=1,
                                  temperal_downsample=[False, True, True, True],
                                  latents_mean=[0.0] * 4, latents_std=[1.0] * 4)


def build_qwen_image_edit(directory: Path, *, plus: bool = False) -> Path:
    """Qwen-Image-Edit (one image) or -Edit-Plus (several): the condition images go through the
    Qwen2.5-VL encoder's vision tower and, as latents, beside the noisy ones into the transformer."""
    import diffusers

    base = _qwen_image_parts(directory)
    tokenizer = base.tokenizer
    tokenizer.chat_template = td._CHAT_TEMPLATE
    cls = diffusers.QwenImageEditPlusPipeline if plus else diffusers.QwenImageEditPipeline
    pipe = cls(scheduler=base.scheduler, vae=_qwen_vae_16x(), text_encoder=base.text_encoder, tokenizer=tokenizer,
               processor=_qwen_vl_processor(tokenizer), transformer=base.transformer)
    return td._save(pipe, directory)


def _flux_vae() -> Any:
    """A FLUX.1-style 16-channel VAE, here with 16x downsampling (LongCat uses FLUX's VAE; the pipeline
    reads the factor from the block count), so its megapixel edit inputs and outputs stay small."""
    from diffusers import AutoencoderKL

    torch.manual_seed(0)
    return AutoencoderKL(
        in_channels=3, out_channels=3, block_out_channels=(8,) * 5, down_block_types=("DownEncoderBlock2D",) * 5,
        up_block_types=("UpDecoderBlock2D",) * 5, latent_channels=16, norm_num_groups=4, layers_per_block=1,
        sample_size=32, scaling_factor=td.FLUX_VAE_SCALING, shift_factor=td.FLUX_VAE_SHIFT,
        use_quant_conv=False, use_post_quant_conv=False, mid_block_add_attention=False,
    )


def _answer_nothing(text_encoder: Any) -> None:
    """Make the encoder's language head end every reply at once.

    LongCat-Image rewrites each prompt with its text encoder before drawing (up to 512 new tokens
    after a long system prompt, which the tiny byte-level tokenizer makes 10k tokens long). Only the
    encoder's hidden states feed the image, so a zero head whose argmax, token 0, is declared an end
    token makes the rewrite one step: the same code path, a fraction of the CPU time.
    """
    text_encoder.config.tie_word_embeddings = False
    text_encoder.lm_head.weight = torch.nn.Parameter(torch.zeros_like(text_encoder.lm_head.weight))
    ends = text_encoder.generation_config.eos_token_id
    ends = [ends] if isinstance(ends, int) else list(ends or [])
    text_encoder.generation_config.eos_token_id = [0, *ends]


def build_longcat_image(directory: Path, *, edit: bool = False) -> Path:
    """LongCat-Image (or -Edit): the Qwen2.5-VL encoder reads the prompt (and the edit's image), a
    FLUX-style packed-latent transformer draws."""
    import diffusers

    base = _qwen_image_parts(directory)
    tokenizer = base.tokenizer
    tokenizer.chat_template = td._CHAT_TEMPLATE
    _answer_nothing(base.text_encoder)
    torch.manual_seed(0)
    transformer = diffusers.LongCatImageTransformer2DModel(
        patch_size=1, in_channels=64, num_layers=1, num_single_layers=1, attention_head_dim=16,
        num_attention_heads=2, joint_attention_dim=16, pooled_projection_dim=16, axes_dims_rope=[4, 6, 6],
    )
    cls = diffusers.LongCatImageEditPipeline if edit else diffusers.LongCatImagePipeline
    pipe = cls(scheduler=diffusers.FlowMatchEulerDiscreteScheduler(shift=3.0), vae=_flux_vae(),
               text_encoder=base.text_encoder, tokenizer=tokenizer, text_processor=_qwen_vl_processor(tokenizer),
               transformer=transformer)
    return td._save(pipe, directory)


def build_sdxl(directory: Path) -> Path:
    """Stable Diffusion XL: two CLIP text encoders (the second with a projection) and a UNet taking
    their concatenation plus the pooled and size embeddings."""
    from diffusers import AutoencoderKL, EulerDiscreteScheduler, StableDiffusionXLPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModelWithProjection, CLIPTokenizer

    work = td._work_dir(directory)
    tokenizer, text_encoder = td.tiny_clip_text(work / "clip-1")
    tokenizer_2 = CLIPTokenizer.from_pretrained(work / "clip-1")
    torch.manual_seed(0)
    text_encoder_2 = CLIPTextModelWithProjection(CLIPTextConfig(
        bos_token_id=0, eos_token_id=1, pad_token_id=1, hidden_size=32, intermediate_size=37, num_attention_heads=4,
        num_hidden_layers=2, vocab_size=len(tokenizer), max_position_embeddings=77, projection_dim=32,
    ))
    unet = UNet2DConditionModel(
        sample_size=td.DEFAULT_SIDE // 2, in_channels=4, out_channels=4, block_out_channels=(16, 32),
        layers_per_block=1, norm_num_groups=8, down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"), cross_attention_dim=64, attention_head_dim=(2, 4),
        addition_embed_type="text_time", addition_time_embed_dim=8, projection_class_embeddings_input_dim=80,
        transformer_layers_per_block=(1, 1), use_linear_projection=True,
    )
    vae = AutoencoderKL(
        in_channels=3, out_channels=3, block_out_channels=(16, 32), latent_channels=4, norm_num_groups=8,
        down_block_types=("DownEncoderBlock2D",) * 2, up_block_types=("UpDecoderBlock2D",) * 2, layers_per_block=1,
        sample_size=td.DEFAULT_SIDE,
    )
    scheduler = EulerDiscreteScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear",
                                       steps_offset=1, timestep_spacing="leading")
    pipe = StableDiffusionXLPipeline(vae=vae, text_encoder=text_encoder, text_encoder_2=text_encoder_2,
                                     tokenizer=tokenizer, tokenizer_2=tokenizer_2, unet=unet, scheduler=scheduler,
                                     force_zeros_for_empty_prompt=True, add_watermarker=False)
    return td._save(pipe, directory)


def build_omnigen(directory: Path) -> Path:
    """OmniGen: one Phi-3-style transformer reads text tokens and image latents together; a 4x VAE.

    Its processor counts one token per 16x16 pixels of an input image (the real 8x VAE with 2x2
    patches), so the tiny transformer uses ``patch_size=4`` over the 4x VAE to keep that count true.
    """
    from diffusers import AutoencoderKL, FlowMatchEulerDiscreteScheduler, OmniGenPipeline, OmniGenTransformer2DModel

    from tests.adapters.tiny_hf import build_tokenizer

    tokenizer = build_tokenizer(["<|image_1|>", "<|image_2|>"], vocab_size=400)
    torch.manual_seed(0)
    transformer = OmniGenTransformer2DModel(
        in_channels=4, patch_size=4, hidden_size=32, num_attention_heads=4, num_key_value_heads=4,
        intermediate_size=64, num_layers=1, pad_token_id=tokenizer.pad_token_id, vocab_size=len(tokenizer),
        max_position_embeddings=4096, original_max_position_embeddings=4096, pos_embed_max_size=64,
        time_step_dim=32, rope_scaling={"short_factor": [1.0] * 4, "long_factor": [1.0] * 4},  # head_dim / 2
    )
    vae = AutoencoderKL(
        in_channels=3, out_channels=3, block_out_channels=(8, 8, 8), latent_channels=4, norm_num_groups=4,
        down_block_types=("DownEncoderBlock2D",) * 3, up_block_types=("UpDecoderBlock2D",) * 3, layers_per_block=1,
        sample_size=32, mid_block_add_attention=False,
    )
    pipe = OmniGenPipeline(transformer=transformer, scheduler=FlowMatchEulerDiscreteScheduler(), vae=vae,
                           tokenizer=tokenizer)
    return td._save(pipe, directory)
