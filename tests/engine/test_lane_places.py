"""A backend's place in its lane is held while the backend works, not while the engine stores what it
made (issue 27: encoding, hashing and writing each image kept a slot of the model busy, so with
16 places the run waited on PNG encoding as if it were the model)."""

import threading

import anyio
import pytest
from fakes import ScriptedBackend
from test_kinds import registries  # noqa: F401 - the fixture
from test_runner import bind

from umni.engine.kinds import register
from umni.engine.kinds.base import Kind, KindContext
from umni.engine.kinds.generate import ImageOutput
from umni.engine.runner import Runner
from umni.graph.graph import Graph
from umni.graph.nodes import Node
from umni.store.cache import Cache


def _storing_waits_for(cache: Cache, released: threading.Event) -> list[str]:
    """Make the first image write wait (in its worker thread) until `released` is set."""
    real = cache.blobs.put_image
    waited: list[str] = []

    def put_image(image):
        if not waited:
            waited.append("waited" if released.wait(timeout=3) else "timed out")
        return real(image)

    cache.blobs.put_image = put_image
    return waited


def test_a_backend_takes_its_next_call_while_the_last_image_is_stored(tmp_path):
    backend = ScriptedBackend()
    second_call = threading.Event()
    real_generate = backend.generate

    async def generate(parts, *, seed=0):
        if backend.calls["generate"] == 1:  # this is the second call
            second_call.set()
        return await real_generate(parts, seed=seed)

    backend.generate = generate
    cache = Cache(tmp_path)
    waited = _storing_waits_for(cache, second_call)
    g = Graph("two")
    g.generate("a", ["a red cube"])
    g.generate("b", ["a blue ball"])
    out = anyio.run(Runner(bind(backend), cache, concurrency=1).run_graph, g)
    assert [out[n].status for n in ("a", "b")] == ["computed", "computed"]
    # one place: the second call could start only because storing the first image gave it up
    assert waited == ["waited"]


class DrawThenCheck(Kind):
    """Draws, stores the image, then calls the backend again about it: the second call must wait
    for a place again."""

    name = "draw_then_check_test"
    default_role = "generate"
    output = "image"
    Output = ImageOutput

    async def execute(self, ctx: KindContext) -> ImageOutput:
        backend = ctx.backend
        reply = await ctx.call(lambda: backend.generate(list(ctx.node.prompt), seed=ctx.seed()))
        ref = await ctx.store_image(reply.image)
        await ctx.call(lambda: backend.choose(["is it drawn?"], ["yes", "no"]))
        return ImageOutput.of(ref, reply)


@pytest.mark.usefixtures("registries")
def test_a_call_after_storing_waits_for_a_place_again(tmp_path):
    register(DrawThenCheck())
    backend = ScriptedBackend(delay=0.02)
    g = Graph("many")
    for i in range(6):
        g.add(Node(f"n{i}", "draw_then_check_test", prompt=(f"thing {i}",)))
    out = anyio.run(Runner(bind(backend), Cache(tmp_path), concurrency=2).run_graph, g)
    assert all(o.status == "computed" for o in out.values())
    assert backend.calls == {"generate": 6, "choose": 6}
    assert backend.max_in_flight == 2  # never more calls at once than places


def test_a_node_that_fails_while_storing_gives_back_its_place_once(tmp_path):
    """A failure after the place was given up must not give it up a second time (the lane would
    then admit more calls than it has places)."""
    backend = ScriptedBackend(delay=0.02)
    cache = Cache(tmp_path)
    real = cache.blobs.put_image
    count = {"n": 0}

    def put_image(image):
        count["n"] += 1
        if count["n"] % 2:
            raise ValueError("cannot encode this one")
        return real(image)

    cache.blobs.put_image = put_image
    g = Graph("wide")
    for i in range(10):
        g.generate(f"g{i}", [f"prompt {i}"])
    out = anyio.run(Runner(bind(backend), cache, concurrency=3).run_graph, g)
    assert sorted(o.status for o in out.values()) == ["computed"] * 5 + ["failed"] * 5
    assert backend.max_in_flight == 3
