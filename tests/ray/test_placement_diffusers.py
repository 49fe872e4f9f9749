"""A real diffusers edit pipeline (a tiny random InstructPix2Pix) gives the same image through a
Ray replica as in process: images travel between driver and actor without changing a pixel."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

ray = pytest.importorskip("ray")
pytest.importorskip("diffusers")

from tests.adapters.tiny_diffusers import build_tiny_ip2p  # noqa: E402
from umni.backends import create_backend  # noqa: E402
from umni.util.spec import Spec  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def cluster() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False)
    yield
    ray.shutdown()


def edited_png(spec: str) -> bytes:
    async def edit() -> bytes:
        backend = create_backend(Spec.parse(spec))
        await backend.ensure_started()
        try:
            source = Image.new("RGB", (32, 32), (200, 40, 40))
            reply = await backend.edit([source], "make it blue", seed=3)  # type: ignore[attr-defined]
            image = reply.image if hasattr(reply, "image") else reply
            buffer = io.BytesIO()
            image.save(buffer, format="PNG")
            return buffer.getvalue()
        finally:
            await backend.ensure_closed()

    return asyncio.run(edit())


def test_diffusers_edit_is_the_same_on_ray(tmp_path: Path) -> None:
    model = build_tiny_ip2p(tmp_path / "tiny-ip2p")
    spec = f"diffusers/{model}?steps=2&image_guidance=1.5"
    local = edited_png(spec)
    # Ray gives an actor as many torch threads as its cpus=; CPU float sums depend on the thread count,
    # so the replica gets the driver's two (with cpus=1 the pixels differ in the last bits)
    placed = edited_png(spec + "&placement=ray&cpus=2")
    assert placed == local
