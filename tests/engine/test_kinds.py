"""Node kinds as a registry: typed Refs checked by Graph.validate, per-node retry and cache policy,
a new kind or tool role added from one module, and typed handles passed on with the outcomes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, runtime_checkable
from typing import Protocol as TypingProtocol

import anyio
import pytest
from fakes import ScriptedBackend
from PIL import Image
from pydantic import BaseModel
from tenacity import RetryCallState

from umni.backends.bindings import Bindings
from umni.backends.roles import known_roles, role_interface
from umni.engine.kinds import Kind, KindContext, known_kinds, register
from umni.engine.kinds.tools import ToolRole, known_tools, register_tool
from umni.engine.runner import Runner
from umni.graph.graph import Graph, Node, Ref
from umni.graph.outcomes import CaseResult
from umni.store.cache import Cache
from umni.util.errors import ConfigError
from umni.util.policy import CachePolicy, RetryPolicy
from umni.util.spec import Spec

FAST_RETRY = RetryPolicy(max_attempts=4, initial_wait=0.001, max_wait=0.01, jitter=0.0)


def bind(backend, roles=("generate", "edit", "understand", "judge")):
    return Bindings({r: backend for r in roles})


def run(runner, graph):
    return anyio.run(runner.run_graph, graph)


# ------------------------------------------------------------------------------------- registry


def test_every_builtin_kind_and_tool_role_is_registered():
    assert known_kinds() == ["answer", "compute", "edit", "generate", "judge", "respond", "tool"]
    assert known_tools() == ["detect", "embed", "ocr"]


def test_builders_return_refs_typed_by_what_the_node_outputs():
    g = Graph("c")
    image = g.generate("draw", "a cube")
    text = g.respond("plan", "a plan")
    answer = g.answer("q", [image, "?"], ["a", "b"])
    value = g.compute("n", lambda x: 1, x=answer)
    assert (image.type, text.type, answer.type, value.type) == ("image", "text", "value", "value")
    assert image.maybe().type == "image" and image.maybe().optional
    assert Ref("draw") == image  # the type describes, it does not identify


# ---------------------------------------------------------------------------------- typed refs


def test_validate_refuses_a_text_passed_as_an_edit_image():
    g = Graph("c")
    plan = g.respond("plan", "describe a cube")
    g.edit("edit", plan, "make it blue")
    with pytest.raises(ConfigError, match=r"node 'edit': image 0 needs image, but node 'plan' outputs text"):
        g.validate()


def test_validate_refuses_a_hand_made_ref_to_a_value_as_a_tool_image():
    g = Graph("c")
    g.answer("q", "pick one", ["a", "b"])
    g.tool("read", "ocr", Ref("q"))
    with pytest.raises(ConfigError, match=r"node 'read': image 0 needs image, but node 'q' outputs value"):
        g.validate()


def test_validate_refuses_a_ref_whose_declared_type_is_not_what_its_node_outputs():
    g = Graph("c")
    g.respond("plan", "describe a cube")
    g.generate("draw", [Ref("plan", type="image")])
    with pytest.raises(ConfigError, match=r"prompt part 0 is a Ref typed image, but node 'plan' outputs text"):
        g.validate()


def test_texts_and_values_are_fine_in_prompts_and_any_output_in_compute_inputs():
    g = Graph("c")
    plan = g.respond("plan", "describe a cube")
    image = g.generate("draw", [plan])
    answer = g.answer("q", [image, plan, "?"], ["a", "b"])
    g.compute("both", lambda image, answer, plan: answer, image=image, answer=answer, plan=plan)
    assert g.validate() == ["plan", "draw", "q", "both"]


def test_the_text_as_edit_image_mistake_never_reaches_a_backend(tmp_path):
    backend = ScriptedBackend()
    g = Graph("c")
    g.edit("edit", g.respond("plan", "describe"), "make it blue")
    with pytest.raises(ConfigError, match="needs image"):
        run(Runner(bind(backend), Cache(tmp_path)), g)
    assert sum(backend.calls.values()) == 0


# ----------------------------------------------------------------------------- policies as data


def test_a_node_retry_policy_overrides_the_runs(tmp_path):
    backend = ScriptedBackend(fail_times={"generate": 2, "respond": 2})
    g = Graph("c")
    g.policy(g.generate("draw", "a cube"), retry=RetryPolicy(max_attempts=1))
    g.respond("plan", "a plan")
    out = run(Runner(bind(backend), Cache(tmp_path), retry=FAST_RETRY), g)
    assert out["draw"].status == "failed" and out["draw"].failure.attempts == 1
    assert out["plan"].status == "computed"
    assert backend.calls == {"generate": 1, "respond": 3}


def test_a_node_that_may_not_read_the_cache_is_recomputed_and_its_readers_stay_cached(tmp_path):
    backend = ScriptedBackend()
    cache = Cache(tmp_path)

    def graph():
        g = Graph("c")
        image = g.policy(g.generate("draw", "a cube"), cache=CachePolicy(read=False))
        g.answer("q", [image, "colour?"], ["red", "blue"])
        return g

    first = run(Runner(bind(backend), cache), graph())
    second = run(Runner(bind(backend), cache), graph())
    assert (second["draw"].status, second["q"].status) == ("computed", "cached")
    assert backend.calls == {"generate": 2, "choose": 1}
    assert second["q"].output == first["q"].output


def test_a_node_that_does_not_write_leaves_nothing_in_the_cache(tmp_path):
    backend = ScriptedBackend()
    cache = Cache(tmp_path)

    def graph():
        g = Graph("c")
        g.policy(g.respond("plan", "a plan"), cache=CachePolicy(write=False))
        return g

    run(Runner(bind(backend), cache), graph())
    assert run(Runner(bind(backend), cache), graph())["plan"].status == "computed"
    assert backend.calls == {"respond": 2}


def test_policies_are_not_part_of_the_key(tmp_path):
    backend = ScriptedBackend()
    cache = Cache(tmp_path)
    g = Graph("c")
    g.respond("plan", "a plan")
    run(Runner(bind(backend), cache), g)
    again = Graph("c")
    again.policy(again.respond("plan", "a plan"), retry=RetryPolicy(max_attempts=1))
    assert run(Runner(bind(backend), cache), again)["plan"].status == "cached"


# ------------------------------------------------------------------- a new kind and tool role


class CountOutput(BaseModel):
    value: int


class CountWords(Kind):
    """A kind defined outside umni.engine.kinds: counts the words of its prompt's texts, in process."""

    name = "count_words"
    calls_backend: ClassVar[bool] = False
    Output = CountOutput

    async def execute(self, ctx: KindContext) -> CountOutput:
        ctx.calls += 1
        return CountOutput(value=sum(len(p.split()) for p in ctx.parts() if isinstance(p, str)))


@runtime_checkable
class MeasuresBrightness(TypingProtocol):
    async def brightness(self, image: Image.Image) -> float: ...


class Brightness(ToolRole):
    name = "brightness_test"
    interface = MeasuresBrightness

    async def run(self, ctx: KindContext, image: Image.Image) -> Any:
        return await ctx.call(lambda: ctx.backend.brightness(image))


class BrightnessBackend(ScriptedBackend):
    roles = frozenset({"generate", "brightness_test"})

    async def brightness(self, image: Image.Image) -> float:
        await self._enter("brightness")
        return float(sum(image.convert("L").getdata())) / (image.width * image.height)


@pytest.fixture
def registries(monkeypatch):
    """Kinds and tool roles registered by a test are gone after it."""
    import umni.engine.kinds.tools
    from umni.backends import roles
    from umni.graph import registry

    known_kinds(), known_tools()  # the built-in ones are loaded first
    monkeypatch.setattr(registry, "_KINDS", dict(registry._KINDS))
    monkeypatch.setattr(umni.engine.kinds.tools, "_TOOLS", dict(umni.engine.kinds.tools._TOOLS))
    monkeypatch.setattr(roles, "_PLUGIN_TOOL_ROLES", dict(roles._PLUGIN_TOOL_ROLES))


def test_a_kind_registered_from_one_module_runs_and_caches(tmp_path, registries):
    register(CountWords())
    cache = Cache(tmp_path)

    def graph():
        g = Graph("c")
        plan = g.respond("plan", "a plan")
        ref = g.add(Node("n", "count_words", prompt=("three little words", plan)))
        assert ref.type == "value"
        return g

    backend = ScriptedBackend(judge_text="two words")
    first = run(Runner(bind(backend), cache), graph())
    assert first["n"].output == {"value": 3 + len(first["plan"].output["text"].split())}
    assert run(Runner(bind(backend), cache), graph())["n"].status == "cached"


def test_a_tool_role_registered_from_one_module_is_bound_and_runs(tmp_path, registries):
    with pytest.raises(ConfigError, match="unknown role 'brightness_test'"):
        Bindings.from_specs(roles=[("brightness_test", Spec.parse("test-light/a"))])
    register_tool(Brightness())
    assert "brightness_test" in known_roles() and role_interface("brightness_test") is MeasuresBrightness
    with pytest.raises(ConfigError, match="cannot fill role 'brightness_test'"):
        Bindings.from_specs(roles=[("brightness_test", Spec.parse("scripted/m"))], shared={"scripted/m": ScriptedBackend()})
    backend = BrightnessBackend()
    spec = str(backend.spec)
    bindings = Bindings.from_specs(roles=[("generate", backend.spec), ("brightness_test", backend.spec)], shared={spec: backend})
    g = Graph("c")
    g.tool("light", "brightness_test", g.generate("draw", "a cube"))
    out = run(Runner(bindings, Cache(tmp_path)), g)
    assert out["light"].status == "computed" and 0.0 <= out["light"].output["value"] <= 255.0
    assert backend.calls == {"generate": 1, "brightness": 1}


def test_an_unknown_kind_is_refused_with_the_known_ones():
    g = Graph("c")
    g.add(Node("n", "nonsense"))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"unknown node kind 'nonsense' \(known: answer, .*compute"):
        g.validate()


# ----------------------------------------------------------------------------- typed handles


@dataclass(frozen=True)
class Handles:
    image: Ref
    question: Ref


def test_outcomes_come_back_with_the_graphs_handles_and_are_read_by_them(tmp_path):
    g: Graph[Handles] = Graph("c")
    image = g.generate("draw", "a cube")
    question = g.answer("q", [image, "colour?"], ["red", "blue"])
    g.with_handles(Handles(image, question))
    result = run(Runner(bind(ScriptedBackend()), Cache(tmp_path)), g)
    assert isinstance(result, CaseResult) and result.handles == Handles(Ref("draw"), Ref("q"))
    assert result[result.handles.question] is result["q"]
    assert result[result.handles.image].image is not None


# ------------------------------------------------------------------- retries after the first try


@dataclass(frozen=True)
class RecordingPolicy(RetryPolicy):
    """Waits nothing, and notes the attempt number and error each wait was asked for."""

    seen: list[tuple[int, str]] = field(default_factory=list, compare=False)

    def wait(self, state: RetryCallState) -> float:
        self.seen.append((state.attempt_number, str(state.outcome.exception())))
        return 0.0


def test_retries_after_a_direct_first_attempt_keep_tenacitys_attempt_numbers(tmp_path):
    backend = ScriptedBackend(fail_times={"respond": 2})
    events: list[dict[str, Any]] = []
    policy = RecordingPolicy(max_attempts=4)
    g = Graph("c")
    g.respond("plan", "a plan")
    runner = Runner(bind(backend), Cache(tmp_path), retry=policy)
    runner.events.emit = lambda event, **fields: events.append({"event": event, **fields})  # type: ignore[method-assign]
    out = run(runner, g)
    assert out["plan"].status == "computed" and backend.calls == {"respond": 3}
    assert [n for n, _ in policy.seen] == [1, 2] and all("scripted failure of respond" in e for _, e in policy.seen)
    assert [e["attempt"] for e in events if e["event"] == "node.retry"] == [1, 2]
    assert runner.stats.calls["understand"] == 3


def test_the_attempt_limit_and_the_time_budget_stop_retries(tmp_path):
    backend = ScriptedBackend(fail_times={"respond": 10})
    g = Graph("c")
    g.respond("plan", "a plan")
    out = run(Runner(bind(backend), Cache(tmp_path), retry=RecordingPolicy(max_attempts=3)), g)
    assert (out["plan"].failure.kind, out["plan"].failure.attempts, backend.calls["respond"]) == ("backend", 3, 3)
    spent = ScriptedBackend(fail_times={"respond": 10})
    out = run(Runner(bind(spent), Cache(tmp_path / "b"), retry=RecordingPolicy(max_attempts=9, budget_seconds=0.0)), g)
    assert (out["plan"].failure.attempts, spent.calls["respond"]) == (1, 1)  # no time left for a second try


def test_a_failure_that_is_not_retryable_is_not_retried(tmp_path):
    backend = ScriptedBackend(fail_times={"respond": 1}, retryable=False)
    g = Graph("c")
    g.respond("plan", "a plan")
    out = run(Runner(bind(backend), Cache(tmp_path), retry=RecordingPolicy(max_attempts=5)), g)
    assert (out["plan"].status, backend.calls["respond"]) == ("failed", 1)
