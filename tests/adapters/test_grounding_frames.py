"""Detection replies mapped to the labels asked for and to the image's pixels, per model family."""

import pytest

from umni_adapters.hf_parsing import grounding_prompt, parse_grounding
from umni_adapters.hf_tools import _asked_label


def test_a_pixel_reply_is_scaled_from_the_size_the_model_saw():
    # Qwen2.5-VL saw the 640x480 photo resized to 644x476 and answered in those pixels
    reply = '[{"label": "cat", "box_2d": [322, 119, 644, 476]}]'
    [box] = parse_grounding(reply, ["cat"], 640, 480, frame=(644.0, 476.0))
    assert box.box == pytest.approx((320.0, 120.0, 640.0, 480.0))
    # the same numbers read on the 0..1000 grid would put the box elsewhere
    [grid] = parse_grounding(reply, ["cat"], 640, 480)
    assert grid.box == pytest.approx((206.08, 57.12, 412.16, 228.48))


def test_the_prompt_names_the_frame_it_asks_for():
    assert "from 0 to 1000" in grounding_prompt(["cat"])
    assert "pixels of the 644x476 image" in grounding_prompt(["cat"], pixels=(644, 476))


@pytest.mark.parametrize(
    ("phrase", "expected"),
    [
        ("car", "car"),
        ("car seat.", "car seat"),
        ("car seat car", "car seat"),  # merged neighbouring phrases: the label sharing most words
        ("red apple", "apple"),  # an adjective glued on
        ("giraffe", "giraffe"),  # nothing asked: kept as the detector named it
    ],
)
def test_detector_phrases_map_back_to_asked_labels(phrase, expected):
    assert _asked_label(phrase, ["car", "car seat", "apple"]) == expected
