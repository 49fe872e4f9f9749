"""What crosses to a Ray replica and back holds images as PNG bytes, never PIL objects (issue 14)."""

from __future__ import annotations

import io
import pickle
from typing import Any

from PIL import Image

from umni.backends.roles import ImageReply, TextReply, Usage
from umni.backends.wire import from_wire, to_wire
from umni.store.images import encode_png


class _Recorder(pickle.Pickler):
    """Pickles as Ray would, noting the type of every object in the payload."""

    def __init__(self, buffer: io.BytesIO) -> None:
        super().__init__(buffer)
        self.types: set[type] = set()

    def persistent_id(self, obj: Any) -> None:
        self.types.add(type(obj))
        return None


def payload_types(value: Any) -> set[type]:
    recorder = _Recorder(io.BytesIO())
    recorder.dump(value)
    return recorder.types


def picture(mode: str = "RGB") -> Image.Image:
    image = Image.new("RGB", (8, 6), (10, 200, 30)).convert(mode)
    image.info["umni-sim-scene"] = '{"objects": []}'
    return image


def test_call_arguments_cross_without_pil_objects() -> None:
    args = (["a prompt", picture()], [picture("L"), picture("CMYK")], "make it blue")
    wire = to_wire(args)
    assert not any(issubclass(t, Image.Image) for t in payload_types(wire))
    assert any(issubclass(t, Image.Image) for t in payload_types(args))  # the check sees PIL objects when there


def test_images_come_back_with_mode_size_pixels_and_text_info() -> None:
    for mode in ("RGB", "RGBA", "L", "P", "CMYK"):
        original = picture(mode)
        back = from_wire(pickle.loads(pickle.dumps(to_wire([original]))))[0]
        assert (back.mode, back.size) == (original.mode, original.size)
        assert back.tobytes() == original.tobytes()
        assert back.info["umni-sim-scene"] == original.info["umni-sim-scene"]


def test_an_image_reply_crosses_as_its_stored_png() -> None:
    reply = ImageReply(image=picture(), usage=Usage(input_tokens=3), notes=("prompt_truncated: 2 words",))
    wire = to_wire(reply)
    assert not any(issubclass(t, Image.Image) for t in payload_types(wire))
    back = from_wire(pickle.loads(pickle.dumps(wire)))
    assert isinstance(back, ImageReply)
    assert back.png == encode_png(reply.image)  # what the store would write in process, byte for byte
    assert back.image.size == reply.image.size and back.usage == reply.usage and back.notes == reply.notes


def test_other_replies_pass_unchanged() -> None:
    reply = TextReply(text="yes", usage=Usage(output_tokens=1))
    assert from_wire(to_wire(reply)) == reply
