import anyio
from fakes import ScriptedBackend

from umni.backends.bindings import Bindings
from umni.engine.runner import RetryPolicy, Runner
from umni.graph.graph import Graph
from umni.store.cache import Cache
from umni.util.errors import ParseFailure

FAST_RETRY = RetryPolicy(max_attempts=3, initial_wait=0.001, max_wait=0.01, jitter=0.0, parse_retries=2)


def bind(backend, roles=("generate", "edit", "understand", "judge")):
    return Bindings({r: backend for r in roles})


def chain(case="c1"):
    g = Graph(case)
    img = g.generate("draw", ["a red cube"])
    edited = g.edit("edit", img, "make it blue")
    g.answer("q", [edited, "what colour?"], ["red", "blue", "green"])
    return g


def run(runner, graph):
    return anyio.run(runner.run_graph, graph)


def test_nodes_run_after_their_inputs_and_results_are_cached(tmp_path):
    backend = ScriptedBackend()
    cache = Cache(tmp_path)
    first = run(Runner(bind(backend), cache), chain())
    assert [first[n].status for n in ("draw", "edit", "q")] == ["computed"] * 3
    second = run(Runner(bind(backend), cache), chain())
    assert [second[n].status for n in ("draw", "edit", "q")] == ["cached"] * 3
    assert backend.calls == {"generate": 1, "edit": 1, "choose": 1}
    assert second["q"].output == first["q"].output


def test_concurrency_limit_per_backend(tmp_path):
    backend = ScriptedBackend(delay=0.02)
    g = Graph("wide")
    for i in range(12):
        g.generate(f"g{i}", [f"prompt {i}"])
    runner = Runner(bind(backend), Cache(tmp_path), concurrency=3)
    out = run(runner, g)
    assert all(o.status == "computed" for o in out.values())
    assert backend.max_in_flight == 3


def test_independent_nodes_overlap_rather_than_run_in_layers(tmp_path):
    slow = ScriptedBackend("slow", delay=0.3)
    fast = ScriptedBackend("fast", delay=0.01)
    g = Graph("c")
    g.generate("slow", ["x"])
    a = g.generate("fast", ["y"], role="edit_free")  # placeholder role replaced below
    g.nodes["fast"].role = "generate2"
    bindings = Bindings({"generate": slow, "generate2": fast, "understand": fast})
    g.answer("q", [a, "?"], ["1", "2"])
    events = []
    runner = Runner(bindings, Cache(tmp_path))
    original = runner._finish

    def spy(run_, outcome, *more):
        events.append(outcome.node)
        original(run_, outcome, *more)

    runner._finish = spy
    run(runner, g)
    # the answer on the fast image finished before the slow, unrelated node
    assert events.index("q") < events.index("slow")


def test_retryable_errors_are_retried_then_succeed(tmp_path):
    backend = ScriptedBackend(fail_times={"generate": 2})
    runner = Runner(bind(backend), Cache(tmp_path), retry=FAST_RETRY)
    out = run(runner, chain())
    assert out["draw"].status == "computed"
    assert backend.calls["generate"] == 3
    assert runner.stats.calls["generate"] == 3


def test_give_up_is_a_typed_failure_that_blocks_dependents_and_is_not_cached(tmp_path):
    backend = ScriptedBackend(fail_times={"generate": 10})
    cache = Cache(tmp_path)
    runner = Runner(bind(backend), cache, retry=FAST_RETRY)
    out = run(runner, chain())
    assert out["draw"].status == "failed"
    assert out["draw"].failure.kind == "backend"
    assert out["draw"].failure.attempts == 3
    assert out["edit"].status == "blocked" and out["q"].status == "blocked"
    assert out["q"].output is None
    assert backend.calls["generate"] == 3 and backend.calls["edit"] == 0
    # errors are never cached: the next run calls again (and now succeeds)
    out2 = run(Runner(bind(backend), cache, retry=FAST_RETRY), chain())
    assert out2["draw"].status == "failed"  # 10 scripted failures: 3 + 3 used
    backend.fail_times.clear()
    out3 = run(Runner(bind(backend), cache, retry=FAST_RETRY), chain())
    assert out3["q"].status == "computed"


def test_non_retryable_errors_are_not_retried(tmp_path):
    backend = ScriptedBackend(fail_times={"generate": 1}, retryable=False)
    out = run(Runner(bind(backend), Cache(tmp_path), retry=FAST_RETRY), chain())
    assert out["draw"].status == "failed" and backend.calls["generate"] == 1


def test_retry_after_is_honoured(tmp_path):
    from umni.util.errors import BackendError

    policy = RetryPolicy(max_attempts=3, initial_wait=5.0, max_wait=60.0)

    class State:
        class outcome:
            @staticmethod
            def exception():
                return BackendError("slow down", retryable=True, retry_after=0.25)

    assert policy.wait(State()) == 0.25


def _parse(text):
    if not text.startswith("Score: "):
        raise ParseFailure("no score line")
    return int(text.split(":")[1])


def test_judge_parse_failures_are_retried_then_recorded(tmp_path):
    backend = ScriptedBackend(judge_text="I think it is fine")
    g = Graph("j")
    img = g.generate("draw", ["x"])
    g.judge("verdict", [img, "score it"], _parse)
    out = run(Runner(bind(backend), Cache(tmp_path), retry=FAST_RETRY), g)
    assert out["verdict"].status == "failed"
    assert out["verdict"].failure.kind == "parse"
    assert out["verdict"].failure.raw == "I think it is fine"
    assert backend.calls["respond"] == 3  # one call plus two parse retries


def test_invalid_and_degenerate_outputs_are_counted_not_scored(tmp_path):
    from PIL import Image

    from umni.backends.roles import ChoiceReply, ImageReply

    class Broken(ScriptedBackend):
        async def generate(self, parts, *, seed=0):
            return ImageReply(Image.new("RGB", (1, 1)))

        async def choose(self, parts, options, *, seed=0):
            return ChoiceReply(7, "H", "letter")

    backend = Broken()
    g = Graph("b")
    img = g.generate("draw", ["x"])
    g.answer("q", ["pick"], ["a", "b"])
    g.answer("q2", [img, "pick"], ["a", "b"])
    runner = Runner(bind(backend), Cache(tmp_path), retry=FAST_RETRY)
    out = run(runner, g)
    assert out["draw"].failure.kind == "degenerate"
    assert out["q"].failure.kind == "invalid"
    assert out["q2"].status == "blocked"
    assert runner.stats.failures == {"degenerate": 1, "invalid": 1}


def test_when_condition_skips_and_skips_propagate(tmp_path):
    backend = ScriptedBackend()
    g = Graph("loop")
    first = g.generate("round0", ["draw"])
    verdict = g.compute("ok", lambda image: True, image=first)
    again = g.generate("round1", ["draw again"])
    g.when(again, lambda ok: not ok, ok=verdict)
    g.answer("q_after", [again, "?"], ["a", "b"])
    g.compute("final", lambda a, b: "round1" if b is not None else "round0", a=first, b=again.maybe())
    out = run(Runner(bind(backend), Cache(tmp_path)), g)
    assert out["round1"].status == "skipped"
    assert out["q_after"].status == "skipped"
    assert out["final"].value == "round0"
    assert backend.calls["generate"] == 1


def test_rebinding_understand_recomputes_only_answers(tmp_path):
    gen = ScriptedBackend("gen")
    cache = Cache(tmp_path)
    run(Runner(Bindings({"generate": gen, "edit": gen, "understand": gen}), cache), chain())
    other = ScriptedBackend("other-understander")
    out = run(Runner(Bindings({"generate": gen, "edit": gen, "understand": other}), cache), chain())
    assert out["draw"].status == "cached" and out["edit"].status == "cached"
    assert out["q"].status == "computed"
    assert gen.calls == {"generate": 1, "edit": 1, "choose": 1}
    assert other.calls == {"choose": 1}


def test_backend_params_that_change_outputs_change_keys(tmp_path):
    cache = Cache(tmp_path)
    a = ScriptedBackend(tag="v1")
    b = ScriptedBackend(tag="v2")
    run(Runner(bind(a), cache), chain())
    out = run(Runner(bind(b), cache), chain())
    assert out["draw"].status == "computed"


def test_many_cases_are_windowed(tmp_path):
    from umni.engine.runner import CaseJob

    backend = ScriptedBackend()
    runner = Runner(bind(backend), Cache(tmp_path), window=4)
    done = []
    jobs = [CaseJob(i, f"c{i}", lambda i=i: chain(f"c{i}")) for i in range(40)]
    anyio.run(runner.run, jobs, lambda job, g, outcomes: done.append(job.case_id))
    assert sorted(done) == sorted(f"c{i}" for i in range(40))
    # identical graphs share work across cases: one call per node overall
    assert backend.calls == {"generate": 1, "edit": 1, "choose": 1}


def test_compute_constants_are_passed_and_keyed(tmp_path):
    def above(value, threshold):
        return value > threshold

    cache = Cache(tmp_path)
    backend = ScriptedBackend()
    results = []
    for threshold in (0, 5, 5):
        g = Graph("k")
        g.compute("check", above, const={"threshold": threshold}, value=g.compute("v", lambda: 3))
        out = run(Runner(bind(backend), cache), g)
        results.append((out["check"].status, out["check"].value))
    assert results == [("computed", True), ("computed", False), ("cached", False)]


def test_an_attempt_that_hangs_is_cut_off_and_bounded(tmp_path):
    backend = ScriptedBackend(delay=5.0)
    policy = RetryPolicy(max_attempts=2, initial_wait=0.001, max_wait=0.01, jitter=0.0, attempt_timeout=0.05)
    g = Graph("hang")
    g.generate("draw", ["x"])
    out = run(Runner(bind(backend), Cache(tmp_path), retry=policy), g)
    assert out["draw"].failure.kind == "backend" and out["draw"].failure.attempts == 2
    assert "no answer within" in out["draw"].failure.message


def test_downstream_keys_depend_on_image_content_not_on_how_it_was_made(tmp_path):
    """Two generators that draw the same pixels: the answer about the image is computed once."""
    from PIL import Image

    from umni.backends.roles import ImageReply, Usage

    class Flat(ScriptedBackend):
        async def generate(self, parts, *, seed=0):
            await self._enter("generate")
            return ImageReply(Image.new("RGB", (16, 16), (9, 9, 9)), Usage(input_tokens=len(self.spec.name)))

    cache = Cache(tmp_path)
    reader = ScriptedBackend("reader")
    for name in ("gen-a", "gen-bb"):
        g = Graph("same")
        img = g.generate("draw", ["x"])
        g.answer("q", [img, "?"], ["a", "b"])
        out = run(Runner(Bindings({"generate": Flat(name), "understand": reader}), cache), g)
    assert out["draw"].status == "computed" and out["q"].status == "cached"
    assert reader.calls == {"choose": 1}


def test_a_fresh_image_reads_the_same_as_its_stored_png(tmp_path):
    """Readers of a just-made image see what a resumed run would decode from the cache."""
    from PIL import Image

    from umni.store.images import as_stored, encode_png

    made = Image.new("P", (12, 12))
    made.putpalette([0, 0, 0, 250, 10, 10] * 128)
    made.info.update({"umni-sim-scene": "{}", "dpi": (72, 72), "other": "x"})
    stored = as_stored(made)
    decoded = Image.open(__import__("io").BytesIO(encode_png(made)))
    decoded.load()
    assert stored.mode == decoded.mode == "RGB"
    assert stored.tobytes() == decoded.tobytes()
    assert stored.info == {k: v for k, v in decoded.info.items() if k.startswith("umni-")} == {"umni-sim-scene": "{}"}
