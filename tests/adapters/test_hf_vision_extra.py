"""A model whose processor needs torchvision names the extra that installs it, instead of a bare
"loading failed" (the Qwen-VL and LLaVA-OneVision image processors import torchvision)."""

import json
from pathlib import Path

import anyio
import pytest

pytest.importorskip("transformers")

from umni.util.errors import ConfigError  # noqa: E402
from umni.util.spec import Spec  # noqa: E402
from umni_adapters.hf import HFBackend  # noqa: E402


def build_tiny_qwen25_vl(path: Path) -> Path:
    """A random two-layer Qwen2.5-VL saved with the processor config the hub checkpoints carry."""
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    text = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2,
            "num_key_value_heads": 1, "vocab_size": 300, "max_position_embeddings": 256,
            "rope_scaling": {"type": "mrope", "mrope_section": [2, 3, 3]}}
    vision = {"depth": 1, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "out_hidden_size": 32,
              "patch_size": 14, "spatial_merge_size": 2, "fullatt_block_indexes": [0]}
    Qwen2_5_VLForConditionalGeneration(Qwen2_5_VLConfig(text_config=text, vision_config=vision)).save_pretrained(path)
    processor = {"image_processor_type": "Qwen2VLImageProcessor", "processor_class": "Qwen2_5_VLProcessor"}
    (path / "preprocessor_config.json").write_text(json.dumps(processor))
    return path


def test_a_processor_that_needs_torchvision_names_the_extra(tmp_path):
    try:
        import torchvision  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("torchvision is installed here, so the processor loads")
    model = build_tiny_qwen25_vl(tmp_path / "qwen")
    backend = HFBackend(Spec.parse(f"hf/{model}"))
    with pytest.raises(ConfigError, match=r"needs torchvision.*umni\[vision\]"):
        anyio.run(backend.start)
