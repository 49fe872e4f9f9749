"""Tiny random transformers checkpoints for the families tests/adapters did not build: chat VLMs
(Qwen2.5-VL, Qwen3-VL, LLaVA-OneVision) and tool models (Grounding DINO, CLIP, SigLIP, DINOv3).

Each builder writes config, random weights, processor and a locally trained tokenizer into a folder,
exactly what `hf/<folder>` loads for a hub checkpoint, so the tests go through the real loading,
classification, chat-template and post-processing code. Sizes are the smallest the model code
accepts; nothing here says anything about answer quality.
"""

from __future__ import annotations

from pathlib import Path

import torch

from tests.adapters.tiny_hf import _chat_template, build_tokenizer

#: The markers Qwen's processors put around and inside an image span.
_QWEN_VISION = {"vision_start_token": "<|vision_start|>", "vision_end_token": "<|vision_end|>",
                "image_token": "<|image_pad|>", "video_token": "<|video_pad|>"}
_QWEN_IMAGE_SPAN = "<|vision_start|><|image_pad|><|vision_end|>"


def _text(tokenizer, **extra) -> dict:
    """A two-layer decoder config sized to the tokenizer (shared by every chat VLM here)."""
    return {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
            "num_key_value_heads": 1, "vocab_size": len(tokenizer), "max_position_embeddings": 1024,
            "bos_token_id": tokenizer.bos_token_id, "eos_token_id": tokenizer.eos_token_id,
            "pad_token_id": tokenizer.pad_token_id, **extra}


def _qwen_tokenizer():
    template = _chat_template(_QWEN_IMAGE_SPAN)
    return build_tokenizer(list(_QWEN_VISION.values()), extra_named=_QWEN_VISION, chat_template=template), template


def _qwen_ids(tokenizer) -> dict:
    ids = {name: tokenizer.convert_tokens_to_ids(token) for name, token in _QWEN_VISION.items()}
    return {"image_token_id": ids["image_token"], "video_token_id": ids["video_token"],
            "vision_start_token_id": ids["vision_start_token"], "vision_end_token_id": ids["vision_end_token"]}


def build_qwen25_vl(path: Path) -> Path:
    """Qwen2.5-VL: 14-pixel patches merged 2x2, images resized to at most 56x56 (4 image tokens)."""
    from transformers import (
        Qwen2_5_VLConfig,
        Qwen2_5_VLForConditionalGeneration,
        Qwen2_5_VLProcessor,
        Qwen2VLImageProcessor,
        Qwen2VLVideoProcessor,
    )

    tokenizer, template = _qwen_tokenizer()
    text = _text(tokenizer, rope_scaling={"type": "mrope", "mrope_section": [2, 3, 3]})
    vision = {"depth": 1, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "out_hidden_size": 32,
              "patch_size": 14, "spatial_merge_size": 2, "fullatt_block_indexes": [0]}
    config = Qwen2_5_VLConfig(text_config=text, vision_config=vision, **_qwen_ids(tokenizer))
    config.architectures = ["Qwen2_5_VLForConditionalGeneration"]
    torch.manual_seed(0)
    Qwen2_5_VLForConditionalGeneration(config).eval().save_pretrained(path)
    pixels = {"min_pixels": 28 * 28, "max_pixels": 56 * 56, "patch_size": 14, "merge_size": 2}
    Qwen2_5_VLProcessor(image_processor=Qwen2VLImageProcessor(**pixels), tokenizer=tokenizer,
                        video_processor=Qwen2VLVideoProcessor(**pixels), chat_template=template).save_pretrained(path)
    return path


def build_qwen3_vl(path: Path) -> Path:
    """Qwen3-VL: 16-pixel patches merged 2x2, one deepstack layer, interleaved multimodal RoPE."""
    from transformers import (
        Qwen2VLImageProcessor,
        Qwen3VLConfig,
        Qwen3VLForConditionalGeneration,
        Qwen3VLProcessor,
        Qwen3VLVideoProcessor,
    )

    tokenizer, template = _qwen_tokenizer()
    text = _text(tokenizer, head_dim=16,
                 rope_scaling={"rope_type": "default", "mrope_section": [2, 3, 3], "mrope_interleaved": True})
    vision = {"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "out_hidden_size": 32,
              "patch_size": 16, "spatial_merge_size": 2, "deepstack_visual_indexes": [1],
              "num_position_embeddings": 16}
    config = Qwen3VLConfig(text_config=text, vision_config=vision, **_qwen_ids(tokenizer))
    config.architectures = ["Qwen3VLForConditionalGeneration"]
    torch.manual_seed(0)
    Qwen3VLForConditionalGeneration(config).eval().save_pretrained(path)
    pixels = {"min_pixels": 32 * 32, "max_pixels": 64 * 64, "patch_size": 16, "merge_size": 2}
    Qwen3VLProcessor(image_processor=Qwen2VLImageProcessor(**pixels), tokenizer=tokenizer,
                     video_processor=Qwen3VLVideoProcessor(patch_size=16, merge_size=2),
                     chat_template=template).save_pretrained(path)
    return path


def build_llava_onevision(path: Path) -> Path:
    """LLaVA-OneVision: a SigLIP tower on 32-pixel tiles, one grid pinpoint, a Qwen2 language model."""
    from transformers import (
        LlavaOnevisionConfig,
        LlavaOnevisionForConditionalGeneration,
        LlavaOnevisionImageProcessor,
        LlavaOnevisionProcessor,
        LlavaOnevisionVideoProcessor,
    )

    template = _chat_template("<image>")
    tokenizer = build_tokenizer(["<image>", "<video>"], chat_template=template,
                                extra_named={"image_token": "<image>", "video_token": "<video>"})
    vision = {"model_type": "siglip_vision_model", "hidden_size": 32, "intermediate_size": 64,
              "num_hidden_layers": 2, "num_attention_heads": 2, "image_size": 32, "patch_size": 8}
    config = LlavaOnevisionConfig(
        text_config={"model_type": "qwen2", **_text(tokenizer)}, vision_config=vision,
        image_token_id=tokenizer.convert_tokens_to_ids("<image>"),
        video_token_id=tokenizer.convert_tokens_to_ids("<video>"),
        vision_feature_layer=-1, image_grid_pinpoints=[[32, 32]], vision_aspect_ratio="anyres_max_1",
    )
    config.architectures = ["LlavaOnevisionForConditionalGeneration"]
    torch.manual_seed(0)
    LlavaOnevisionForConditionalGeneration(config).eval().save_pretrained(path)
    side = {"height": 32, "width": 32}
    LlavaOnevisionProcessor(
        image_processor=LlavaOnevisionImageProcessor(size=side, crop_size=side, image_grid_pinpoints=[[32, 32]]),
        tokenizer=tokenizer, video_processor=LlavaOnevisionVideoProcessor(size=side), num_image_tokens=16,
        vision_feature_select_strategy="full", chat_template=template, vision_aspect_ratio="anyres_max_1",
    ).save_pretrained(path)
    return path


def build_grounding_dino(path: Path) -> Path:
    """Grounding DINO: a two-stage Swin backbone, a one-layer BERT over a word-piece vocabulary of the
    test labels, 8 queries. (Two decoder layers: its box heads are tied across layers from the second.)"""
    from transformers import (
        BertTokenizerFast,
        GroundingDinoConfig,
        GroundingDinoForObjectDetection,
        GroundingDinoImageProcessor,
        GroundingDinoProcessor,
    )

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", "a", "red", "cube", "blue", "ball", "dog", "the"]
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    vocab = words + [c for c in letters if c not in words] + ["##" + c for c in letters]
    tokenizer = BertTokenizerFast(vocab={token: index for index, token in enumerate(vocab)}, do_lower_case=True)
    config = GroundingDinoConfig(
        backbone_config={"model_type": "swin", "image_size": 32, "patch_size": 4, "embed_dim": 8, "depths": [1, 1],
                         "num_heads": [1, 1], "window_size": 2, "out_features": ["stage1", "stage2"]},
        text_config={"model_type": "bert", "vocab_size": len(tokenizer), "hidden_size": 32, "intermediate_size": 32,
                     "num_hidden_layers": 1, "num_attention_heads": 2, "max_position_embeddings": 64},
        d_model=32, encoder_layers=1, decoder_layers=2, encoder_ffn_dim=32, decoder_ffn_dim=32,
        encoder_attention_heads=2, decoder_attention_heads=2, num_queries=8, num_feature_levels=2,
        encoder_n_points=2, decoder_n_points=2, max_text_len=32, use_timm_backbone=False, backbone=None,
    )
    config.architectures = ["GroundingDinoForObjectDetection"]
    torch.manual_seed(0)
    GroundingDinoForObjectDetection(config).eval().save_pretrained(path)
    processor = GroundingDinoImageProcessor(size={"shortest_edge": 32, "longest_edge": 64})
    GroundingDinoProcessor(image_processor=processor, tokenizer=tokenizer).save_pretrained(path)
    return path


_TOWER = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2}
_TEXT_TOWER = {**_TOWER, "vocab_size": 99, "max_position_embeddings": 16, "bos_token_id": 0, "eos_token_id": 1,
               "pad_token_id": 1}


def build_clip(path: Path) -> Path:
    """A CLIP dual encoder: projected 16-dimensional image features."""
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel

    config = CLIPConfig(text_config=_TEXT_TOWER, vision_config={**_TOWER, "image_size": 32, "patch_size": 8},
                        projection_dim=16)
    config.architectures = ["CLIPModel"]
    torch.manual_seed(0)
    CLIPModel(config).eval().save_pretrained(path)
    CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}).save_pretrained(path)
    return path


def build_siglip(path: Path) -> Path:
    """A SigLIP dual encoder over 32-pixel images."""
    from transformers import SiglipConfig, SiglipImageProcessor, SiglipModel

    config = SiglipConfig(text_config=_TEXT_TOWER, vision_config={**_TOWER, "image_size": 32, "patch_size": 8})
    config.architectures = ["SiglipModel"]
    torch.manual_seed(0)
    SiglipModel(config).eval().save_pretrained(path)
    SiglipImageProcessor(size={"height": 32, "width": 32}).save_pretrained(path)
    return path


def build_dinov3(path: Path) -> Path:
    """A DINOv3 ViT with two register tokens (the layout GIR-Bench's official extractor loads)."""
    from transformers import DINOv3ViTConfig, DINOv3ViTImageProcessor, DINOv3ViTModel

    config = DINOv3ViTConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                             image_size=32, patch_size=8, num_register_tokens=2)
    config.architectures = ["DINOv3ViTModel"]
    torch.manual_seed(0)
    DINOv3ViTModel(config).eval().save_pretrained(path)
    DINOv3ViTImageProcessor(size={"height": 32, "width": 32}).save_pretrained(path)
    return path
