"""Backends start side by side: each of two backends here finishes starting only once the other has
begun, which can only happen when their starts overlap (one after the other would wait forever)."""

import anyio
import pytest

from umni.backends.contract import Backend, start_backends
from umni.util.spec import Spec


class SlowToLoad(Backend):
    provider = "slow"

    def __init__(self, name: str, began: dict[str, anyio.Event]) -> None:
        super().__init__(Spec.parse(f"slow/{name}"))
        self.name = name
        self.began = began

    async def start(self) -> None:
        self.began[self.name].set()
        other = "judge" if self.name == "painter" else "painter"
        await self.began[other].wait()  # a sequential start would never see the other begin


def test_backends_start_concurrently():
    async def main() -> None:
        began = {"painter": anyio.Event(), "judge": anyio.Event()}
        backends = [SlowToLoad("painter", began), SlowToLoad("judge", began)]
        with anyio.fail_after(5):
            await start_backends(backends)
        assert all(b._started for b in backends)

    anyio.run(main)


def test_a_failing_start_is_raised():
    class Broken(Backend):
        provider = "broken"

        async def start(self) -> None:
            raise RuntimeError("weights not found")

    with pytest.raises(RuntimeError, match="weights not found"):  # the error itself, not a group
        anyio.run(start_backends, [Broken(Spec.parse("broken/x"))])


def _count_starts(monkeypatch) -> list[str]:
    started: list[str] = []
    real = Backend.start

    async def start(self: Backend) -> None:
        started.append(str(self.spec))
        await real(self)

    monkeypatch.setattr(Backend, "start", start)
    return started


def test_a_backend_loads_only_when_one_of_its_nodes_misses_the_cache(tmp_path, monkeypatch):
    """A rerun whose every node is cached loads no model; swapping the answering model loads that
    model alone (issue 26: an assembling step loaded every placed model to compute nothing)."""
    from umni.run.evaluation import RunRequest, evaluate

    def run(out: str, roles: list[str]):
        return evaluate(RunRequest(protocol="umnibench", out=tmp_path / out, model="sim/umm", roles=roles,
                                   cache=tmp_path / "cache", limit=2, progress=False))

    started = _count_starts(monkeypatch)
    run("first", [])
    assert started == ["sim/umm"]
    started.clear()
    run("again", [])
    assert started == []  # every node cached: no backend started
    swapped = run("swap", ["understand=sim/umm?skill=0.3"])
    assert started == ["sim/umm?skill=0.3"]  # the drawing and editing model stays unloaded
    assert swapped.summary.counts.failed == 0


def test_a_backend_that_fails_to_start_stops_the_run_and_keeps_what_was_computed(tmp_path):
    """The start now happens mid-run: its error is the run's (raised as itself), and the nodes
    computed before it stay in the cache."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from fakes import ScriptedBackend

    from umni.backends.bindings import Bindings
    from umni.engine.runner import Runner
    from umni.graph.graph import Graph
    from umni.store.cache import Cache

    class WeightsMissing(ScriptedBackend):
        async def start(self) -> None:
            raise RuntimeError("weights not found")

    def graph() -> Graph:
        g = Graph("c1")
        image = g.generate("draw", ["a red cube"])
        g.answer("q", [image, "what colour?"], ["red", "blue"])
        return g

    painter, cache = ScriptedBackend("painter"), Cache(tmp_path)
    with pytest.raises(RuntimeError, match="weights not found"):
        anyio.run(Runner(Bindings({"generate": painter, "understand": WeightsMissing("judge")}), cache).run_graph, graph())
    again = anyio.run(Runner(Bindings({"generate": painter, "understand": ScriptedBackend("judge")}), cache).run_graph, graph())
    assert again["draw"].status == "cached" and again["q"].status == "computed"
    assert painter.calls == {"generate": 1}
