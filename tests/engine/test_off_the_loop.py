"""Work that costs CPU inside the engine runs off the event loop: compute functions (one at a
time, on their own thread) and the decoding of images a node reads. A model call elsewhere in
the graph goes on meanwhile."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import anyio
from fakes import ScriptedBackend
from PIL import Image

from umni.backends.bindings import Bindings
from umni.backends.roles import ChoiceReply
from umni.engine.runner import Runner
from umni.graph.graph import Graph
from umni.store.blobs import BlobStore
from umni.store.cache import Cache


class SignallingBackend(ScriptedBackend):
    """Answers, and leaves a file saying so (a blocked event loop would never get to call it)."""

    def __init__(self, flag: Path) -> None:
        super().__init__("signal")
        self.flag = flag

    async def choose(self, parts: Sequence[object], options: Sequence[str], *, seed: int = 0) -> ChoiceReply:
        self.flag.write_text("answered")
        return ChoiceReply(0, options[0], "letter")


def wait_for_the_answer(flag: str) -> dict[str, object]:
    deadline = time.monotonic() + 10
    while not os.path.exists(flag) and time.monotonic() < deadline:
        time.sleep(0.005)  # on the event loop's thread, the answer could never come
    return {"answered": os.path.exists(flag), "thread": threading.current_thread().name}


def test_a_compute_function_that_blocks_does_not_stop_model_calls(tmp_path: Path) -> None:
    flag = tmp_path / "answered"
    g = Graph("c")
    g.compute("slow", wait_for_the_answer, const={"flag": str(flag)})
    g.answer("q", ["pick one"], ["a", "b"])
    out = anyio.run(Runner(Bindings({"understand": SignallingBackend(flag)}), Cache(tmp_path / "cache")).run_graph, g)
    value = out["slow"].output["value"]
    assert out["slow"].status == "computed" and value["answered"] is True
    assert value["thread"].startswith("umni-compute")


def alone(marker: str, i: int) -> bool:
    """True when no other compute function was running meanwhile (the marker file is exclusive)."""
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL)
    except FileExistsError:
        return False
    time.sleep(0.01)
    os.close(fd)
    os.remove(marker)
    return True


def test_compute_functions_run_one_at_a_time(tmp_path: Path) -> None:
    g = Graph("c")
    for i in range(8):
        g.compute(f"f{i}", alone, const={"marker": str(tmp_path / "running"), "i": i})
    out = anyio.run(Runner(Bindings({}), Cache(tmp_path / "cache")).run_graph, g)
    assert [out[f"f{i}"].output["value"] for i in range(8)] == [True] * 8


def test_images_a_node_reads_are_decoded_off_the_event_loop(tmp_path: Path, monkeypatch) -> None:
    decoded_on: list[str] = []
    real_open = Image.open

    def recording_open(*args, **kwargs):  # a spy: the real decoder runs
        decoded_on.append(threading.current_thread().name)
        return real_open(*args, **kwargs)

    backend = ScriptedBackend()
    g = Graph("c")
    drawn = g.generate("draw", ["a cube"])
    g.answer("q1", [drawn, "colour?"], ["red", "blue"])
    g.answer("q2", [drawn, "shape?"], ["cube", "ball"])
    cache = Cache(tmp_path)
    roles = ("generate", "understand")
    first = anyio.run(Runner(Bindings({r: backend for r in roles}), cache).run_graph, g)
    assert all(o.status == "computed" for o in first.values())
    # A fresh blob store (a resumed run) holds nothing decoded: the answers must decode the image.
    cache.blobs = BlobStore(cache.blobs.root)
    monkeypatch.setattr(Image, "open", recording_open)
    g2 = Graph("c")
    drawn = g2.generate("draw", ["a cube"])
    g2.answer("q1", [drawn, "colour?"], ["red", "green"])  # new questions: computed, reading the image
    g2.answer("q2", [drawn, "shape?"], ["cube", "cone"])
    second = anyio.run(Runner(Bindings({r: backend for r in roles}), cache).run_graph, g2)
    assert second["draw"].status == "cached" and second["q1"].status == "computed"
    assert decoded_on and threading.main_thread().name not in decoded_on


class RemoteLikeBlobs(BlobStore):
    """A folder store that declares its checks network calls (as the S3 store does), and records
    which thread asks for them."""

    inline_checks = False

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.checked_on: list[str] = []

    def verify(self, sha256: str) -> bool:
        self.checked_on.append(threading.current_thread().name)
        return super().verify(sha256)


def test_a_cache_hit_checks_a_remote_blob_off_the_event_loop(tmp_path: Path) -> None:
    """With S3 blobs each hit's image check is a HEAD (or a download) on the network: made on the
    event loop it held up every other node for its round trip."""
    backend = ScriptedBackend()
    roles = ("generate", "understand")
    cache = Cache(tmp_path)

    def graph() -> Graph:
        g = Graph("c")
        drawn = g.generate("draw", ["a cube"])
        g.answer("q", [drawn, "colour?"], ["red", "blue"])
        return g

    anyio.run(Runner(Bindings({r: backend for r in roles}), cache).run_graph, graph())
    cache.blobs = remote = RemoteLikeBlobs(cache.blobs.root)
    again = anyio.run(Runner(Bindings({r: backend for r in roles}), cache).run_graph, graph())
    assert [again[n].status for n in ("draw", "q")] == ["cached", "cached"]
    assert remote.checked_on and threading.main_thread().name not in remote.checked_on
    assert backend.calls == {"generate": 1, "choose": 1}
