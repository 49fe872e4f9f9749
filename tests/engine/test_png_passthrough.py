"""An image reply that carries its stored PNG bytes (a remote replica's) is stored as it is: the same
blob as encoding the image in process, and no re-encoding on the driver."""

import io
from collections.abc import Sequence

import anyio
from PIL import Image

import umni.store.blobs as blobs
from umni.backends.bindings import Bindings
from umni.backends.contract import Backend
from umni.backends.roles import GENERATE, ImageReply, Part
from umni.engine.runner import Runner
from umni.graph.graph import Graph
from umni.store.cache import Cache
from umni.store.images import encode_png
from umni.util.spec import Spec


def drawing() -> Image.Image:
    image = Image.new("RGB", (24, 16), (30, 120, 200))
    image.putpixel((3, 4), (255, 0, 0))
    return image


class Painter(Backend):
    provider = "painter"
    roles = frozenset({GENERATE})

    def __init__(self, *, as_bytes: bool) -> None:
        super().__init__(Spec.parse("painter/one"))
        self.as_bytes = as_bytes

    async def generate(self, parts: Sequence[Part], *, seed: int = 0) -> ImageReply:
        if not self.as_bytes:
            return ImageReply(image=drawing())
        data = encode_png(drawing())  # what a replica in another process sends
        return ImageReply(image=Image.open(io.BytesIO(data)), png=data)


def run(tmp_path, backend: Painter):
    graph = Graph("one")
    graph.generate("draw", ["a dot"])
    runner = Runner(Bindings({GENERATE: backend}), Cache(tmp_path))
    return anyio.run(runner.run_graph, graph)["draw"]


def test_png_bytes_are_stored_as_they_are(tmp_path, monkeypatch):
    in_process = run(tmp_path / "a", Painter(as_bytes=False))

    def no_encoding(image):
        raise AssertionError("the driver re-encoded an image that came with its PNG bytes")

    monkeypatch.setattr(blobs, "encode_for_store", no_encoding)  # the blob store encodes, in a worker thread
    remote = run(tmp_path / "b", Painter(as_bytes=True))
    assert remote.ok and remote.image.sha256 == in_process.image.sha256
    assert (remote.image.width, remote.image.height) == (24, 16)
