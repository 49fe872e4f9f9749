"""The transformers backend, on tiny random models built offline and loaded through `hf/<folder>`."""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"  # before huggingface_hub is imported: nothing may be downloaded

import json
from pathlib import Path

import anyio
import numpy as np
import pytest
from PIL import Image

from tests.adapters import tiny_hf as tiny
from umni.backends.roles import DETECT, EMBED, GENERATE, JUDGE, UNDERSTAND, ChoiceReply
from umni.util.errors import ConfigError, ParseFailure
from umni.util.spec import Spec
from umni_adapters import hf_loading
from umni_adapters.hf import HFBackend
from umni_adapters.hf_parsing import parse_choice, parse_grounding


def backend(folder: Path, **params: str) -> HFBackend:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return HFBackend(Spec.parse(f"hf/{folder}" + (f"?{query}" if query else "")))


def red_square(size: tuple[int, int] = (40, 30)) -> Image.Image:
    return Image.new("RGB", size, (200, 20, 20))


def noise(seed: int, size: tuple[int, int] = (36, 36)) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8))


# --------------------------------------------------------------------------------------------------
# device and dtype choice


@pytest.mark.parametrize(
    ("requested", "cuda", "mps", "expected"),
    [
        (None, True, True, "cuda"),
        (None, False, True, "mps"),
        (None, False, False, "cpu"),
        ("auto", True, False, "cuda"),
        ("cpu", True, True, "cpu"),
        ("cuda:1", True, False, "cuda:1"),
    ],
)
def test_device_prefers_cuda_then_mps_then_cpu(requested, cuda, mps, expected):
    assert hf_loading.choose_device(requested, cuda=cuda, mps=mps) == expected


@pytest.mark.parametrize(
    ("requested", "cuda", "mps"), [("cuda", False, True), ("mps", True, False), ("tpu", True, True)]
)
def test_device_that_is_not_there_is_a_config_error(requested, cuda, mps):
    with pytest.raises(ConfigError, match=requested):
        hf_loading.choose_device(requested, cuda=cuda, mps=mps)


@pytest.mark.parametrize(
    ("requested", "device", "bf16", "expected"),
    [
        (None, "cuda", True, "bfloat16"),
        (None, "cuda:0", False, "float16"),
        (None, "mps", False, "float16"),
        (None, "cpu", True, "float32"),
        ("auto", "cpu", False, "float32"),
        ("fp16", "cpu", False, "float16"),
        ("bf16", "cuda", False, "bfloat16"),
        ("FP32", "cuda", True, "float32"),
    ],
)
def test_dtype_choice(requested, device, bf16, expected):
    assert hf_loading.choose_dtype(requested, device, bf16_supported=bf16) == expected


def test_unknown_dtype_is_a_config_error():
    with pytest.raises(ConfigError, match="int3"):
        hf_loading.choose_dtype("int3", "cpu", bf16_supported=False)


# --------------------------------------------------------------------------------------------------
# reading replies

OPTIONS = ["red cube", "blue ball", "dark red cube", "green"]


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("B", 1), ("b", 1), ("(B)", 1), ("B.", 1), ("[C]", 2), ("**D**", 3), ("B)\nbecause it is round", 1),
        ("Answer: B", 1), ("Answer:(C)", 2), ("The answer is (C).", 2), ("Option D", 3), ("answer - A", 0),
        ("B. blue ball", 1), ("C: dark red cube", 2),
        ("blue ball", 1), ("The blue ball.", 1), ("red cube", 0), ("Dark red cube", 2), ("green", 3),
        # nothing valid, or more than one thing
        ("E", None), ("Answer: F", None), ("A or B", None), ("Answer: A. Option: B", None),
        ("B. red cube", None), ("I think B", None), ("the answer is a cube", None),
        ("A cube.", None), ("", None), ("::::", None), ("red cube or blue ball", None),
    ],
)
def test_parse_choice(reply, expected):
    assert parse_choice(reply, OPTIONS) == expected


def test_grounding_reply_is_scaled_from_the_1000_grid_to_pixels():
    reply = (
        '```json\n[{"label": "Cube", "box_2d": [100, 250, 500, 1000]},'
        ' {"label": "cat", "box_2d": [0, 0, 1, 1]}]\n```'
    )
    [found] = parse_grounding(reply, ["cube", "ball"], width=200, height=80)
    assert found.label == "cube"
    assert found.box == pytest.approx((20.0, 20.0, 100.0, 80.0))
    assert found.score == 1.0


def test_grounding_reply_amid_prose_with_swapped_and_overhanging_corners():
    reply = 'Here you go: {"label": "ball", "bbox_2d": [600, 1200, 200, -5]} hope that helps'
    [found] = parse_grounding(reply, ["ball"], width=100, height=50)
    assert found.box == pytest.approx((20.0, 0.0, 60.0, 50.0))


def test_grounding_empty_list_means_nothing_found():
    assert parse_grounding("[]", ["cube"], 10, 10) == []


@pytest.mark.parametrize(
    "reply",
    ["I see a cube at the top left", '[{"label": "cube"}]', '[{"label": "cube", "box_2d": [1, 2, 3]}]',
     '[{"label": "cube", "box_2d": ["a", 2, 3, 4]}]', '["cube"]', ""],
)
def test_grounding_reply_that_is_not_boxes_is_a_parse_failure(reply):
    with pytest.raises(ParseFailure) as caught:
        parse_grounding(reply, ["cube"], 100, 100)
    assert caught.value.raw == reply


# --------------------------------------------------------------------------------------------------
# spec validation (cheap, before weights)


def test_missing_local_folder_is_a_config_error_naming_it(tmp_path):
    missing = tmp_path / "no_such_model"
    with pytest.raises(ConfigError, match="no_such_model"):
        HFBackend(Spec.parse(f"hf/{missing}"))
    with pytest.raises(ConfigError, match="does not exist"):
        HFBackend(Spec.parse("hf/./umni_missing_model_dir"))
    with pytest.raises(ConfigError, match="umni_missing"):
        HFBackend(Spec.parse("hf/~/umni_missing_model_dir"))


def test_folder_without_config_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="config.json"):
        HFBackend(Spec.parse(f"hf/{tmp_path}"))


def test_unsupported_model_class_is_a_config_error_listing_what_works(tmp_path):
    from transformers import BertConfig

    config = BertConfig(hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=8)
    config.architectures = ["BertForMaskedLM"]
    config.save_pretrained(tmp_path)
    with pytest.raises(ConfigError) as caught:
        HFBackend(Spec.parse(f"hf/{tmp_path}"))
    message = str(caught.value)
    assert "BertForMaskedLM" in message
    assert "JanusForConditionalGeneration" in message and "AutoModelForImageTextToText" in message
    assert "Owlv2ForObjectDetection" in message and "dinov2" in message


def test_hub_repo_missing_from_offline_cache_is_a_config_error():
    with pytest.raises(ConfigError, match="local hub cache"):
        HFBackend(Spec.parse("hf/umni-test-org/definitely-not-cached"))


def test_local_revision_tracks_config_and_weight_files(tmp_path):
    (tmp_path / "config.json").write_text('{"model_type": "dinov2"}')
    (tmp_path / "model.safetensors").write_bytes(b"x" * 10)
    first = hf_loading.local_revision(tmp_path)
    (tmp_path / "README.md").write_text("notes do not matter")
    assert hf_loading.local_revision(tmp_path) == first
    (tmp_path / "model.safetensors").write_bytes(b"x" * 11)
    second = hf_loading.local_revision(tmp_path)
    assert second != first
    (tmp_path / "config.json").write_text('{"model_type": "dinov2", "hidden_size": 4}')
    assert hf_loading.local_revision(tmp_path) not in (first, second)


# --------------------------------------------------------------------------------------------------
# tiny models, each built once for this file (janus_dir and vlm_dir: tests/adapters/conftest.py)


@pytest.fixture(scope="module")
def detector_dir(tmp_path_factory):
    return tiny.build_owlv2(tmp_path_factory.mktemp("owlv2"))


@pytest.fixture(scope="module")
def embedder_dir(tmp_path_factory):
    return tiny.build_dinov2(tmp_path_factory.mktemp("dinov2"))


def test_roles_follow_the_config(janus_dir, vlm_dir, detector_dir, embedder_dir):
    assert backend(janus_dir).fills() == {UNDERSTAND, JUDGE, GENERATE}
    assert backend(vlm_dir).fills() == {UNDERSTAND, JUDGE, DETECT}
    assert backend(detector_dir).fills() == {DETECT}
    assert backend(embedder_dir).fills() == {EMBED}


def test_identity_records_what_changes_outputs_and_not_the_device(vlm_dir):
    plain = backend(vlm_dir)
    on_cpu = backend(vlm_dir, device="cpu", concurrency="3")
    scored = backend(vlm_dir, mode="likelihood")
    identity = plain.identity()
    assert identity["provider"] == "hf"
    assert identity["name"] == str(Path(vlm_dir).resolve())
    assert identity["revision"] == hf_loading.local_revision(Path(vlm_dir))
    assert identity["dtype"] == "float32"
    assert identity["params"] == {"mode": "letter", "temperature": 0.0, "max_new_tokens": None}
    assert on_cpu.identity_hash() == plain.identity_hash()
    assert scored.identity_hash() != plain.identity_hash()
    assert backend(vlm_dir, dtype="bf16").identity()["dtype"] == "bfloat16"


def test_parameters_are_checked_against_the_model_kind(vlm_dir, janus_dir):
    with pytest.raises(ConfigError, match="cfg"):
        backend(vlm_dir, cfg="3")
    with pytest.raises(ConfigError, match="mode"):
        backend(janus_dir, mode="vibes")
    with pytest.raises(ConfigError, match="colour"):
        backend(janus_dir, colour="red")
    assert backend(janus_dir, cfg="3").identity()["params"]["cfg"] == 3.0


def test_two_specs_naming_one_model_share_its_weights(vlm_dir):
    letter, scored = backend(vlm_dir), backend(vlm_dir, mode="likelihood")

    async def start_both():
        async with anyio.create_task_group() as group:
            group.start_soon(letter.start)
            group.start_soon(scored.start)

    anyio.run(start_both)
    assert letter._loaded is scored._loaded


# --------------------------------------------------------------------------------------------------
# Janus: understands and generates


def test_janus_answers_in_text(janus_dir):
    janus = backend(janus_dir)
    reply = anyio.run(lambda: janus.respond([red_square(), "What colour is this?"], max_tokens=5))
    assert isinstance(reply.text, str)
    assert reply.usage.output_tokens <= 5
    assert reply.usage.images_in == 1
    # 16 image placeholders plus begin/end markers are part of the prompt
    assert reply.usage.input_tokens > 18


def test_janus_letter_choice_reports_its_mode_and_parsed_index(janus_dir):
    janus = backend(janus_dir)
    reply = anyio.run(lambda: janus.choose([red_square(), "Which colour?"], ["red", "blue", "green"]))
    assert isinstance(reply, ChoiceReply)
    assert reply.mode == "letter"
    assert reply.index == parse_choice(reply.text, ["red", "blue", "green"])


def test_janus_image_generation_is_seeded_per_image(janus_dir):
    janus = backend(janus_dir)

    async def make(seed: int, prompt: str = "a red cube"):
        return (await janus.generate([prompt], seed=seed)).image.tobytes()

    async def together():
        results = {}

        async def one(key, seed, prompt):
            results[key] = await make(seed, prompt)

        async with anyio.create_task_group() as group:
            group.start_soon(one, "other", 5, "a blue ball on the left")
            group.start_soon(one, "mine", 1, "a red cube")
        return results

    first = anyio.run(lambda: janus.generate(["a red cube"], seed=1))
    # 32 px / 8 px patches = 4x4 image tokens; the VQ decoder upsamples once (channel_multiplier [1, 2]): 8x8
    assert first.image.size == (8, 8) and first.image.mode == "RGB"
    assert first.usage.images_out == 1 and first.usage.output_tokens == 16
    alone = first.image.tobytes()
    assert anyio.run(make, 1) == alone
    assert anyio.run(together)["mine"] == alone
    assert anyio.run(make, 2) != alone


def test_janus_generation_can_condition_on_an_image(janus_dir):
    janus = backend(janus_dir, cfg="2", image_temperature="0")
    reply = anyio.run(lambda: janus.generate([noise(0), "the same scene at night"], seed=0))
    assert reply.image.size == (8, 8)
    assert reply.usage.images_in == 1


def test_generation_leaves_the_event_loop_free(janus_dir):
    janus = backend(janus_dir)
    anyio.run(janus.start)
    ticks = 0

    async def tick_until_done(done: anyio.Event):
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            await anyio.sleep(0.001)

    async def main():
        done = anyio.Event()
        async with anyio.create_task_group() as group:
            group.start_soon(tick_until_done, done)
            await janus.generate(["a red cube"], seed=3)
            done.set()

    anyio.run(main)
    assert ticks > 3


# --------------------------------------------------------------------------------------------------
# chat VLM: understand, judge, grounding


def test_vlm_likelihood_choice_returns_a_valid_index(vlm_dir):
    vlm = backend(vlm_dir, mode="likelihood")
    options = ["red", "blue", "green", "yellow"]
    reply = anyio.run(lambda: vlm.choose([red_square(), "Which colour is the square?"], options))
    assert reply.mode == "likelihood"
    assert reply.index in range(4)
    assert reply.text == "ABCD"[reply.index]
    again = anyio.run(lambda: vlm.choose([red_square(), "Which colour is the square?"], options))
    assert again.index == reply.index


def test_vlm_letter_choice_parses_what_it_wrote(vlm_dir):
    vlm = backend(vlm_dir)
    options = ["red", "blue"]
    reply = anyio.run(lambda: vlm.choose([red_square(), "Colour?", noise(1)], options))
    assert reply.mode == "letter"
    assert reply.index == parse_choice(reply.text, options)
    assert reply.usage.images_in == 2


def test_vlm_respond_caps_reply_length(vlm_dir):
    vlm = backend(vlm_dir, max_new_tokens="3")
    reply = anyio.run(lambda: vlm.respond(["Describe a cube."], max_tokens=50))
    assert reply.usage.output_tokens <= 3
    assert reply.usage.images_in == 0


def test_vlm_grounding_that_is_not_json_is_a_parse_failure(vlm_dir):
    vlm = backend(vlm_dir)
    with pytest.raises(ParseFailure) as caught:
        anyio.run(lambda: vlm.detect(red_square(), ["cube"]))
    assert caught.value.raw is not None


def test_roles_a_model_lacks_are_refused(vlm_dir):
    vlm = backend(vlm_dir)
    with pytest.raises(ConfigError, match="not generate"):
        anyio.run(lambda: vlm.generate(["a cube"]))


# --------------------------------------------------------------------------------------------------
# tools: zero-shot detection and embeddings


def test_zero_shot_detector_returns_boxes_inside_the_image(detector_dir):
    detector = backend(detector_dir, threshold="0")
    image = red_square((60, 40))
    found = anyio.run(lambda: detector.detect(image, ["cube", "ball"]))
    # OWLv2 proposes one box per patch: (32 / 8) ** 2 = 16, each kept with its best label at threshold 0
    assert len(found) == 16
    for detection in found:
        assert detection.label in ("cube", "ball")
        x0, y0, x1, y1 = detection.box
        assert 0 <= x0 <= x1 <= 60 and 0 <= y0 <= y1 <= 40
        assert 0.0 <= detection.score <= 1.0
    strict = backend(detector_dir, threshold="0.999")
    assert anyio.run(lambda: strict.detect(image, ["cube", "ball"])) == []


def test_embeddings_are_unit_rows_one_per_image(embedder_dir):
    embedder = backend(embedder_dir)
    a, b = noise(1), noise(2)
    rows = anyio.run(lambda: embedder.embed([a, b, a]))
    assert rows.shape == (3, 32)  # hidden_size of the tiny DINOv2
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    assert np.allclose(rows[0], rows[2], atol=1e-6)
    assert not np.allclose(rows[0], rows[1], atol=1e-3)
    alone = anyio.run(lambda: embedder.embed([a]))
    assert np.allclose(alone[0], rows[0], atol=1e-5)


def test_saved_configs_are_what_the_backend_classifies(janus_dir, vlm_dir, detector_dir, embedder_dir):
    kinds = {
        d: hf_loading.classify(json.loads((Path(d) / "config.json").read_text()), str(d))
        for d in (janus_dir, vlm_dir, detector_dir, embedder_dir)
    }
    assert list(kinds.values()) == [hf_loading.JANUS, hf_loading.VLM, hf_loading.DETECTOR, hf_loading.EMBEDDER]
