"""Tiny random transformers models, built offline and saved as a model directory.

Each builder writes what a hub checkpoint would hold (config, weights, processor, tokenizer) into a
folder, so tests load it through the same `hf/<path>` code path a real model takes. Weights are random;
the tests check plumbing (shapes, parsing, seeding), never answer quality.
"""

from __future__ import annotations

from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

#: Words the tiny tokenizers learn merges over; any other text still encodes byte by byte.
_CORPUS = [
    "a red cube on the left of a blue ball",
    "user assistant system answer the question with the letter of the option",
    "A B C D E yes no count how many objects are in the image",
    "reply with JSON only: label box_2d coordinates",
]


def build_tokenizer(special_tokens: list[str], *, extra_named: dict[str, str] | None = None,
                    chat_template: str | None = None, vocab_size: int = 320,
                    model_max_length: int = 512):
    """A byte-level BPE tokenizer trained on a few sentences, wrapped for transformers.

    Byte-level pre-tokenisation means every string encodes (no unknown tokens), and single capital
    letters are tokens of their own, which the likelihood chooser relies on.
    """
    from transformers import PreTrainedTokenizerFast

    core = ["<pad>", "<bos>", "<eos>", "<unk>"]
    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=core + special_tokens,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(_CORPUS, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token="<bos>",
        eos_token="<eos>",
        pad_token="<pad>",
        unk_token="<unk>",
        model_max_length=model_max_length,
        extra_special_tokens=extra_named or {},
    )
    if chat_template is not None:
        fast.chat_template = chat_template
    return fast


#: A chat template in the spirit of the real ones: role tags, image placeholders where images sit.
def _chat_template(image_marker: str) -> str:
    return (
        "{% for message in messages %}<|{{ message['role'] }}|>: "
        "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
        "{% for part in message['content'] %}{% if part['type'] == 'image' %}" + image_marker +
        "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}\n"
        "{% endfor %}{% if add_generation_prompt %}<|assistant|>:{% endif %}"
    )


def build_janus(path: Path) -> Path:
    """A Janus (understand + generate) with 32-pixel inputs, 16 image tokens and 16-pixel outputs."""
    from transformers import (
        JanusConfig,
        JanusForConditionalGeneration,
        JanusImageProcessorPil,
        JanusProcessor,
        JanusVisionConfig,
        JanusVQVAEConfig,
        LlamaConfig,
    )

    tokenizer = build_tokenizer(
        ["<image_placeholder>", "<begin_of_image>", "<end_of_image>"],
        extra_named={"image_token": "<image_placeholder>", "boi_token": "<begin_of_image>",
                     "eoi_token": "<end_of_image>"},
    )
    hidden = 32
    text = LlamaConfig(vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=64, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                       bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                       pad_token_id=tokenizer.pad_token_id)
    vision = JanusVisionConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, image_size=32,
                               patch_size=8, projection_dim=hidden, num_image_tokens=16, mlp_ratio=2.0)
    # GroupNorm in the VQ blocks uses 32 groups, so every channel count is a multiple of 32.
    vq = JanusVQVAEConfig(embed_dim=8, num_embeddings=64, latent_channels=32, base_channels=32,
                          channel_multiplier=[1, 2], num_res_blocks=1, projection_dim=hidden,
                          image_token_embed_dim=hidden)
    config = JanusConfig(text_config=text, vision_config=vision, vq_config=vq,
                         image_token_id=tokenizer.image_token_id)
    config.architectures = ["JanusForConditionalGeneration"]
    torch.manual_seed(0)
    model = JanusForConditionalGeneration(config).eval()
    processor = JanusProcessor(
        image_processor=JanusImageProcessorPil(size={"height": 32, "width": 32}),
        tokenizer=tokenizer,
        chat_template=_chat_template("<image_placeholder>"),
        num_image_tokens=16,
    )
    model.save_pretrained(path)
    processor.save_pretrained(path)
    return path


def build_idefics3(path: Path) -> Path:
    """An Idefics3 (SmolVLM-style) chat VLM: one unsplit 32-pixel image becomes 4 image tokens."""
    from transformers import (
        Idefics3Config,
        Idefics3ForConditionalGeneration,
        Idefics3ImageProcessorPil,
        Idefics3Processor,
    )

    tokenizer = build_tokenizer(
        ["<fake_token_around_image>", "<image>", "<end_of_utterance>", "<global-img>"],
        chat_template=_chat_template("<image>"),
    )
    hidden = 32
    config = Idefics3Config(
        text_config={"model_type": "llama", "vocab_size": len(tokenizer), "hidden_size": hidden,
                     "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
                     "num_key_value_heads": 2, "max_position_embeddings": 512,
                     "bos_token_id": tokenizer.bos_token_id, "eos_token_id": tokenizer.eos_token_id,
                     "pad_token_id": tokenizer.pad_token_id},
        vision_config={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
                       "num_attention_heads": 2, "image_size": 32, "patch_size": 8},
        scale_factor=2,
        image_token_id=tokenizer.convert_tokens_to_ids("<image>"),
    )
    config.architectures = ["Idefics3ForConditionalGeneration"]
    torch.manual_seed(0)
    model = Idefics3ForConditionalGeneration(config).eval()
    image_processor = Idefics3ImageProcessorPil(
        do_image_splitting=False, size={"longest_edge": 32}, max_image_size={"longest_edge": 32})
    processor = Idefics3Processor(image_processor=image_processor, tokenizer=tokenizer, image_seq_len=4,
                                  chat_template=tokenizer.chat_template)
    model.save_pretrained(path)
    processor.save_pretrained(path)
    return path


def build_owlv2(path: Path) -> Path:
    """An OWLv2 zero-shot detector over 32-pixel images (4x4 patches, so 16 candidate boxes)."""
    from transformers import Owlv2Config, Owlv2ForObjectDetection, Owlv2ImageProcessor, Owlv2Processor

    tokenizer = build_tokenizer([], model_max_length=16)
    config = Owlv2Config(
        text_config={"vocab_size": len(tokenizer), "hidden_size": 32, "intermediate_size": 64,
                     "num_hidden_layers": 1, "num_attention_heads": 2, "max_position_embeddings": 16,
                     "bos_token_id": tokenizer.bos_token_id, "eos_token_id": tokenizer.eos_token_id,
                     "pad_token_id": tokenizer.pad_token_id},
        vision_config={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
                       "num_attention_heads": 2, "image_size": 32, "patch_size": 8},
        projection_dim=32,
    )
    config.architectures = ["Owlv2ForObjectDetection"]
    torch.manual_seed(0)
    model = Owlv2ForObjectDetection(config).eval()
    processor = Owlv2Processor(image_processor=Owlv2ImageProcessor(size={"height": 32, "width": 32}),
                               tokenizer=tokenizer)
    model.save_pretrained(path)
    processor.save_pretrained(path)
    return path


def build_dinov2(path: Path) -> Path:
    """A DINOv2 vision encoder over 32-pixel crops; features are 32-dimensional."""
    from transformers import BitImageProcessor, Dinov2Config, Dinov2Model

    config = Dinov2Config(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                          image_size=32, patch_size=8)
    config.architectures = ["Dinov2Model"]
    torch.manual_seed(0)
    model = Dinov2Model(config).eval()
    image_processor = BitImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32},
                                        image_mean=[0.485, 0.456, 0.406], image_std=[0.229, 0.224, 0.225])
    model.save_pretrained(path)
    image_processor.save_pretrained(path)
    return path


#: A tiny Emu3's VQ codebook: every code is a "<|visual token NNNNNN|>" token of the text vocabulary.
EMU3_CODES = 32


def build_emu3(path: Path) -> Path:
    """An Emu3 (understand + generate through one token stream): 4x4-token images, 32-entry codebook."""
    from transformers import Emu3Config, Emu3ForConditionalGeneration, Emu3ImageProcessor, Emu3Processor

    visual = [f"<|visual token {i:06d}|>" for i in range(EMU3_CODES)]
    named = {"image_token": "<image>", "boi_token": "<|image start|>", "eoi_token": "<|image end|>",
             "image_wrapper_token": "<|image token|>", "eof_token": "<|extra_201|>"}
    tokenizer = build_tokenizer(
        [*named.values(), "<|extra_200|>", *visual], extra_named=named,
        chat_template=_chat_template("<image>"), vocab_size=360,
    )
    vocab = tokenizer.get_vocab()
    text = {"vocab_size": len(tokenizer), "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
            "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 512,
            "bos_token_id": tokenizer.bos_token_id, "eos_token_id": tokenizer.eos_token_id,
            "pad_token_id": tokenizer.pad_token_id, "attention_dropout": 0.0}
    vq = {"codebook_size": EMU3_CODES, "embed_dim": 8, "latent_channels": 8, "base_channels": 32,
          "channel_multiplier": [1, 1, 1, 1], "num_res_blocks": 1, "attn_resolutions": [], "hidden_size": 32,
          "temporal_downsample_factor": 4}
    config = Emu3Config(text_config=text, vq_config=vq, vocabulary_map=vocab)
    config.architectures = ["Emu3ForConditionalGeneration"]
    torch.manual_seed(0)
    model = Emu3ForConditionalGeneration(config).eval()
    processor = Emu3Processor(
        image_processor=Emu3ImageProcessor(min_pixels=16 * 16, max_pixels=32 * 32, spatial_factor=8),
        tokenizer=tokenizer, chat_template=_chat_template("<image>"),
    )
    model.save_pretrained(path)
    processor.save_pretrained(path)
    return path
