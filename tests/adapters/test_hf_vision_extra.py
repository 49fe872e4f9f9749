"""A model whose processor needs torchvision names the extra that installs it, instead of a bare
"loading failed" (the Qwen-VL and LLaVA-OneVision image processors import torchvision)."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("transformers")



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
    """Run in a process where torchvision is not there to find (a None entry in sys.modules: found by
    nothing, importing it fails), as on an install without the vision extra."""
    model = build_tiny_qwen25_vl(tmp_path / "qwen")
    code = (
        "import sys\n"
        "sys.modules['torchvision'] = None\n"
        "import anyio\n"
        "from umni.util.errors import ConfigError\n"
        "from umni.util.spec import Spec\n"
        "from umni_adapters.hf import HFBackend\n"
        f"backend = HFBackend(Spec.parse('hf/{model}'))\n"
        "try:\n    anyio.run(backend.start)\nexcept ConfigError as exc:\n    print(exc)\nelse:\n    print('loaded')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert re.search(r"needs torchvision.*umni\[vision\]", done.stdout), (done.stdout, done.stderr[-2000:])
