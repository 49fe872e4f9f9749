"""GENIUS protocol: graphs per variant, runs with sim and with a scripted backend, records and scores.

The scripted backend below plays model and judge with marks fixed by each test, so the expected
numbers are computed by hand; the runner, cache, graph conditions, records and scoring are the real
ones. Generated images are solid colours whose red channel encodes the generation's number, which
lets the judge tell one attempt from the next.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio
import pytest
from PIL import Image

from umni.backends.bindings import Bindings
from umni.backends.contract import Backend
from umni.backends.roles import ChoiceReply, ImageReply, TextReply
from umni.engine.runner import Runner
from umni.graph.graph import ImageFile, Ref
from umni.run.evaluation import RunRequest, evaluate
from umni.store.cache import Cache
from umni.util.errors import BackendError, ConfigError
from umni.util.spec import Spec
from umni_graphs.genius import PROTOCOL, GeniusOptions
from umni_graphs.genius import prompts as P
from umni_graphs.genius.scoring import pixel_copy

SAMPLE = PROTOCOL.bundled_cases()
LABELS = {"Rule Compliance": "rc", "Visual Consistency": "vc", "Aesthetic Quality": "aq", "Copy": "copy"}
JUDGE_CRITIQUE = "The judge says: the tree should be warmer."


def _tasks() -> dict[str, object]:
    return {task.key: task for task in PROTOCOL.load(SAMPLE, GeniusOptions()).cases}


TASKS = _tasks()


# ------------------------------------------------------------------------------ scripted backend

Script = Callable[[str, int, int, str], str]


def marks(table: dict[str, Sequence[int]] | None = None) -> Script:
    """A judge script: ``table[metric][generation]`` for every repeat (default 2 everywhere, Copy 1:
    not a copy, in the official polarity)."""
    table = table or {}

    def script(metric: str, generation: int, repeat: int, prompt: str) -> str:
        values = table.get(metric)
        value = values[generation] if values is not None else (1 if metric == "copy" else 2)
        return f"{next(k for k, v in LABELS.items() if v == metric)}: {value}"

    return script


class ScriptedGenius(Backend):
    """Draws generation n as a solid colour with red = n + 1; judges by script; counts calls."""

    provider = "scripted-genius"
    roles = frozenset({"understand", "generate", "edit", "judge"})

    def __init__(self, judge: Script, *, copy_first_image: bool = False, degenerate: Sequence[int] = (),
                 broken: Sequence[int] = ()) -> None:
        super().__init__(Spec(provider="scripted-genius", name="m"))
        self.judge = judge
        self.copy_first_image = copy_first_image
        self.degenerate = set(degenerate)
        self.broken = set(broken)
        self.generations: list[list[object]] = []
        self.calls: Counter[str] = Counter()

    async def generate(self, parts: Sequence[object], *, seed: int = 0) -> ImageReply:
        n = len(self.generations)
        self.generations.append(list(parts))
        if n in self.broken:
            raise BackendError("scripted outage", retryable=False)
        if n in self.degenerate:
            return ImageReply(Image.new("RGB", (4, 4), "white"))
        if self.copy_first_image:
            return ImageReply(next(p for p in parts if isinstance(p, Image.Image)).copy())
        return ImageReply(Image.new("RGB", (32, 32), (n + 1, 90, 160)))

    async def edit(self, images: Sequence[Image.Image], instruction: str, *, seed: int = 0) -> ImageReply:
        raise AssertionError("GENIUS never edits")

    async def choose(self, parts: Sequence[object], options: Sequence[str], *, seed: int = 0) -> ChoiceReply:
        self.calls["choose"] += 1
        return ChoiceReply(0, options[0], "letter")

    async def respond(self, parts: Sequence[object], *, max_tokens: int = 512, seed: int = 0) -> TextReply:
        text = "\n".join(p for p in parts if isinstance(p, str))
        images = [p for p in parts if isinstance(p, Image.Image)]
        template = text.rsplit(P.ANSWER_HEADING, 1)[-1].strip() if P.ANSWER_HEADING in text else ""
        metric = next((m for label, m in LABELS.items() if template.startswith(label)), None)
        if metric is None:
            self.calls["free text"] += 1
            return TextReply(JUDGE_CRITIQUE if "reviewing an image" in text else "a plan or a critique")
        self.calls[metric] += 1
        generation = images[-1].convert("RGB").getpixel((0, 0))[0] - 1
        return TextReply(self.judge(metric, generation, seed // 1009, text))


def run_cases(backend: ScriptedGenius, keys: Sequence[str], options: GeniusOptions, tmp_path: Path) -> list[dict]:
    """Run the cases one after another (so generation n is the n-th case's) and return their records."""
    bindings = Bindings({role: backend for role in ("understand", "generate", "edit", "judge")})
    cache = Cache(tmp_path / "cache")
    runner = Runner(bindings, cache)
    records = []

    async def go() -> None:
        for key in keys:
            task = TASKS[key]
            outcomes = await runner.run_graph(PROTOCOL.build(task, options))
            records.append(PROTOCOL.record(task, outcomes, options))

    anyio.run(go)
    cache.close()
    return json.loads(json.dumps(records))  # exactly what results.jsonl would hold


# ------------------------------------------------------------------------------ end to end with sim


def test_sim_run_on_bundled_cases_gives_the_main_table(tmp_path):
    result = evaluate(RunRequest(protocol="genius", out=tmp_path / "run", cache=tmp_path / "cache", model="sim/umm", progress=False))
    summary = result.summary
    assert summary.counts.cases == 10 and summary.counts.failed == 0 and summary.counts.blocked == 0
    s = summary.scores
    assert list(s["dimensions"]) == ["implicit_pattern", "symbolic_constraint", "visual_constraint", "prior_conflicting", "multi_semantic"]
    assert s["dimensions"]["multi_semantic"]["vc"] is None
    assert all(s["dimensions"][d]["vc"] is not None for d in s["dimensions"] if d != "multi_semantic")
    assert s["scored"] == {"rc": 10, "vc": 8, "aq": 10}
    assert s["judge_failures"] == {"rc": {}, "vc": {}, "aq": {}} and s["missing_outputs"] == 0 and s["unscored"] == {}
    assert s["overall"] == pytest.approx(0.6 * s["rc"] + 0.35 * s["vc"] + 0.05 * s["aq"], abs=1e-3)
    records = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert len(records) == 10 and all(r["final_round"] == 0 and r["item"] for r in records)
    # Data-weighted: the pooled RC is the mean over the ten items, not over the five dimensions.
    assert s["rc"] == pytest.approx(sum(r["scores"]["rc"] for r in records) / 10, abs=1e-3)

    title, header, rows = PROTOCOL.tables(summary.to_json())[0]
    assert header[:2] == ["Model", "Overall"] and len(header) == 2 + 15 and rows[0][0] == "sim/umm"
    assert rows[0][header.index("Multi-Semantic VC")] == "-"
    report = (tmp_path / "run" / "report.html").read_text()
    assert "GENIUS main table" in report and "Round 0" in report and "Rule Compliance: " in report


VARIANTS = {
    "plan": {"plan": "true"},
    "reflection-judge": {"reflection_rounds": "2"},
    "reflection-self": {"reflection_rounds": "1", "critic": "self"},
    "hints-text": {"hints": "text"},
    "hints-multimodal": {"hints": "multimodal"},
    "probe": {"vqa_probe": "true"},
    "edit-format": {"input_format": "edit", "copy_judge": "false"},
    "fine-grained": {"input_format": "fine_grained"},
}


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("genius-cache")


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_variant_runs_with_sim(variant, tmp_path, shared_cache):
    options = VARIANTS[variant]
    result = evaluate(RunRequest(protocol="genius", out=tmp_path / "run", cache=shared_cache, model="sim/umm",
                                 options=options, progress=False))
    summary = result.summary
    assert summary.counts.cases == 10
    assert summary.counts.failed == 0 and summary.counts.blocked == 0
    s = summary.scores
    assert s["overall"] is not None and s["scored"]["rc"] == 10
    assert ("reflection" in s) == variant.startswith("reflection")
    assert ("probe" in s) == (variant == "probe")
    if variant == "probe":
        assert s["probe"]["answered"] == 10 and s["probe"]["chance"] == 25.0
    if variant.startswith("reflection"):
        rounds = int(options["reflection_rounds"])
        assert [r["round"] for r in s["reflection"]["by_round"]] == list(range(rounds + 1))
    titles = [t for t, _, _ in PROTOCOL.tables(summary.to_json())]
    assert titles[0].startswith("GENIUS main table")


# ------------------------------------------------------------------------------ graph shape per variant


def _build(key: str, **options):
    return PROTOCOL.build(TASKS[key], GeniusOptions(**options))


def test_default_graph_is_the_official_evaluation():
    g = _build("visual_constraint/vc01")  # two vc_hints
    kinds = Counter(n.kind for n in g.nodes.values())
    assert kinds == {"generate": 1, "judge": 3 + 3 + 2 * (1 + 3), "compute": 2}  # one Copy question per hint
    assert g.required_roles() == {"generate", "judge"}
    assert [g.nodes[f"round0/rc/{j}"].repeat for j in range(3)] == [0, 1, 2]
    # VC waits for every hint's copy checks; hint 2's Copy question waits for hint 1's (stop at the first copy).
    assert set(g.nodes["round0/vc1/2"].gate) == {"pixels0", "copy0", "pixels1", "copy1"}  # gate inputs, not keyed
    assert set(g.nodes["round0/vc1/copy"].gate) == {"pixels", "pixels0", "copy0"}
    assert g.nodes["round0/vc1/copy"].prompt[0] == ImageFile(TASKS["visual_constraint/vc01"].case.vc_hints[1].reference.path)
    g.validate()


def test_pre_planning_puts_the_plan_into_the_generation_prompt():
    g = _build("symbolic_constraint/sc01", plan=True)
    assert g.nodes["plan"].kind == "respond" and g.nodes["plan"].role == "understand"
    prompt = g.nodes["round0/image"].prompt
    assert P.PLAN_HEADING in prompt and Ref("plan") in prompt


def test_reflection_unrolls_rounds_with_conditions():
    g = _build("implicit_pattern/2", reflection_rounds=2)
    for k in (1, 2):
        image = g.nodes[f"round{k}/image"]
        # gated (not keyed) on the critic's RC verdicts of the previous round (issue 10.3/10.4)
        assert image.when is not None and set(image.gate) == {"rc0", "rc1", "rc2"} and not image.inputs
        assert {image.gate[f"rc{j}"].node for j in range(3)} == {f"round{k - 1}/critic/rc/{j}" for j in range(3)}
        assert {g.nodes[f"round{k - 1}/critic/rc/{j}"].role for j in range(3)} == {"critic"}
        assert Ref(f"round{k - 1}/image") in image.prompt and Ref(f"round{k - 1}/critique") in image.prompt
        assert g.nodes[f"round{k - 1}/critique"].role == "critic"
        assert f"round{k}/aq/2" in g.nodes
    assert "round2/critique" not in g.nodes
    assert _build("implicit_pattern/2", reflection_rounds=1, critic="self").nodes["round0/critique"].role == "understand"


def test_hints_are_appended_to_the_generation_input():
    task = TASKS["visual_constraint/vc01"].case
    plain = _build("visual_constraint/vc01").nodes["round0/image"].prompt
    text = _build("visual_constraint/vc01", hints="text").nodes["round0/image"].prompt
    multi = _build("visual_constraint/vc01", hints="multimodal").nodes["round0/image"].prompt
    assert text[: len(plain)] == plain and text[len(plain):] == (f"{P.HINT_HEADING} {P.hint_text(task.rc_hint)}",)
    added = multi[len(text):]
    assert [p for p in added if isinstance(p, ImageFile)] == [ImageFile(h.reference.path) for h in task.vc_hints]
    assert P.hint_text(task.vc_hints[1].text) in added


def test_input_formats_reach_the_generate_node():
    edit = _build("symbolic_constraint/sc01", input_format="edit").nodes["round0/image"].prompt
    assert isinstance(edit[0], ImageFile) and isinstance(edit[1], ImageFile) and "[Image 1]" in edit[2]
    fine = _build("symbolic_constraint/sc01", input_format="fine_grained").nodes["round0/image"].prompt
    assert fine[0] == "In this notation" and isinstance(fine[1], ImageFile)


def test_vqa_probe_asks_the_rc_hint_among_three_distractors():
    task = TASKS["prior_conflicting/pc01"]
    node = _build("prior_conflicting/pc01", vqa_probe=True).nodes["probe"]
    options = node.params["options"]
    assert node.kind == "answer" and node.role == "understand" and len(options) == 4
    assert options[task.probe_answer] == P.hint_text(task.case.rc_hint)
    same_dimension = P.hint_text(TASKS["prior_conflicting/pc02"].case.rc_hint)
    assert same_dimension in options  # the only other prior_conflicting case comes first
    assert not any(isinstance(p, Ref) for p in node.prompt)  # context only: no plan, no hints
    # Deterministic and independent of the pool's order.
    pool = [t.case for t in TASKS.values()]
    assert P.probe_choices(task.case, pool) == P.probe_choices(task.case, list(reversed(pool))) == (options, task.probe_answer)


def test_options_are_validated():
    with pytest.raises(ConfigError, match="critic"):
        PROTOCOL.parse_options({"critic": "nobody"})
    with pytest.raises(ConfigError, match="reflection_rounds"):
        PROTOCOL.parse_options({"reflection_rounds": "-1"})
    with pytest.raises(ConfigError, match="options:"):
        PROTOCOL.parse_options({"rounds": "2"})
    assert PROTOCOL.parse_options({"plan": "true", "input_format": "edit"}).input_format is P.InputFormat.EDIT


# ------------------------------------------------------------------------------ reflection with a scripted judge


def test_reflection_stops_when_rc_reaches_2_and_keeps_every_round(tmp_path):
    # Generation 0 gets RC 1, generation 1 gets RC 2: rounds 2 and 3 must not run.
    backend = ScriptedGenius(marks({"rc": [1, 2, 0, 0], "aq": [1, 2, 0, 0]}))
    options = GeniusOptions(reflection_rounds=3)
    [record] = run_cases(backend, ["implicit_pattern/001"], options, tmp_path)

    assert len(backend.generations) == 2
    assert [r["status"] for r in record["rounds"]] == ["done", "done", "skipped", "skipped"]
    assert [r["ran"] for r in record["rounds"]] == [True, True, False, False]
    assert record["rounds"][0]["critique"]["text"] == JUDGE_CRITIQUE
    assert record["rounds"][1]["critique"]["status"] == "skipped"
    assert record["nodes"]["round2/rc/0"]["status"] == "skipped" and record["nodes"]["round3/image"]["status"] == "skipped"
    first, second = record["rounds"][0], record["rounds"][1]
    assert first["image"] and second["image"] and first["image"] != second["image"]
    assert [j["value"] for j in first["rc"]] == [1, 1, 1] and [j["value"] for j in second["rc"]] == [2, 2, 2]
    assert (first["scores"]["rc"], first["scores"]["aq"]) == (50.0, 50.0)
    assert (second["scores"]["rc"], second["scores"]["aq"]) == (100.0, 100.0)
    assert record["final_round"] == 1 and record["scores"]["rc"] == 100.0

    # The second attempt saw the first image and the judge's feedback.
    retry = backend.generations[1]
    assert JUDGE_CRITIQUE in retry and P.PREVIOUS_ATTEMPT in retry
    assert any(isinstance(p, Image.Image) and p.convert("RGB").getpixel((0, 0))[0] == 1 for p in retry)

    s = PROTOCOL.summarize([record], options)
    assert s["reflection"]["stopped_early"] == 1 and s["reflection"]["rounds_run"] == {"2": 1}
    assert [r["rc"] for r in s["reflection"]["by_round"]] == [50.0, 100.0, 100.0, 100.0]
    assert [r["cases_running"] for r in s["reflection"]["by_round"]] == [1, 1, 0, 0]
    views = PROTOCOL.views(record)
    assert [v.title for v in views if v.title.startswith("Round")][:2] == ["Round 0", "Round 1 · final"]


def test_reflection_runs_every_round_while_rc_stays_below_2(tmp_path):
    backend = ScriptedGenius(marks({"rc": [1, 0, 1]}))
    [record] = run_cases(backend, ["multi_semantic/ms01"], GeniusOptions(reflection_rounds=2, critic="self"), tmp_path)
    assert len(backend.generations) == 3 and all(r["ran"] for r in record["rounds"])
    assert [r["scores"]["rc"] for r in record["rounds"]] == [50.0, 0.0, 50.0]
    assert record["final_round"] == 2 and record["rounds"][0]["critique"]["text"] == "a plan or a critique"


# ------------------------------------------------------------------------------ failures


def test_unreadable_judge_answers_are_counted_parse_failures_not_zero(tmp_path):
    def script(metric: str, generation: int, repeat: int, prompt: str) -> str:
        if metric == "rc" and generation == 0:
            return "I think the image looks nice."
        return marks()(metric, generation, repeat, prompt)

    backend = ScriptedGenius(script)
    options = GeniusOptions()
    records = run_cases(backend, ["multi_semantic/ms01", "multi_semantic/ms02"], options, tmp_path)
    failed = records[0]["rounds"][0]["rc"]
    assert [j["status"] for j in failed] == ["failed"] * 3
    assert {j["failure"]["kind"] for j in failed} == {"parse"} and {j["failure"]["attempts"] for j in failed} == {3}
    assert failed[0]["failure"]["raw"] == "I think the image looks nice."
    assert backend.calls["rc"] == 3 * 3 + 3  # three rounds, each tried three times; then the good case
    assert records[0]["scores"]["rc"] == {"failure": "parse"} and records[0]["scores"]["aq"] == 100.0

    s = PROTOCOL.summarize(records, options)
    assert s["judge_failures"]["rc"] == {"parse": 1} and s["scored"]["rc"] == 1
    assert s["rc"] == 100.0  # the failed case is left out, not averaged in as 0
    assert s["dimensions"]["multi_semantic"]["judge_failures"] == {"rc": {"parse": 1}}
    assert ["RC judge failure (parse)", 1] in PROTOCOL.tables({"scores": s})[2][2]


def test_a_pixel_copy_gets_vc_0_whatever_the_judge_says(tmp_path):
    # pc02 has one context image, which is also its vc_hint's reference; the judge would give VC 2.
    copier = ScriptedGenius(marks(), copy_first_image=True)
    [copied] = run_cases(copier, ["prior_conflicting/pc02"], GeniusOptions(), tmp_path / "a")
    hint = copied["rounds"][0]["vc"][0]
    assert hint["pixels"]["copy"] is True and hint["pixels"]["mean_abs_diff"] == 0
    assert hint["copy"]["status"] == "skipped" and [j["status"] for j in hint["rounds"]] == ["skipped"] * 3
    assert copier.calls["vc"] == 0 and copier.calls["copy"] == 0
    assert copied["item"]["vc"] == [{"copied": True, "rounds": [], "has_reference": True}] and copied["scores"]["vc"] == 0.0
    assert copied["scores"]["rc"] == 100.0

    drawer = ScriptedGenius(marks())
    [fresh] = run_cases(drawer, ["prior_conflicting/pc02"], GeniusOptions(), tmp_path / "b")
    assert fresh["rounds"][0]["vc"][0]["pixels"]["copy"] is False and fresh["scores"]["vc"] == 100.0


def test_the_judges_copy_answer_and_its_failure(tmp_path):
    says_copy = ScriptedGenius(marks({"copy": [0]}))  # official polarity: Copy: 0 means a copy
    [record] = run_cases(says_copy, ["prior_conflicting/pc02"], GeniusOptions(), tmp_path / "a")
    assert record["scores"]["vc"] == 0.0 and says_copy.calls["vc"] == 0

    def unreadable_copy(metric: str, generation: int, repeat: int, prompt: str) -> str:
        return "Hard to say." if metric == "copy" else marks()(metric, generation, repeat, prompt)

    confused = ScriptedGenius(unreadable_copy)
    [record] = run_cases(confused, ["prior_conflicting/pc02"], GeniusOptions(), tmp_path / "b")
    assert record["scores"]["vc"] == {"failure": "parse"} and confused.calls["vc"] == 0
    assert record["scores"]["rc"] == 100.0

    no_copy_judge = ScriptedGenius(unreadable_copy)
    [record] = run_cases(no_copy_judge, ["prior_conflicting/pc02"], GeniusOptions(copy_judge=False), tmp_path / "c")
    assert record["scores"]["vc"] == 100.0 and no_copy_judge.calls["copy"] == 0


def test_pixel_comparison():
    image = Image.new("RGB", (16, 16), (10, 20, 30))
    assert pixel_copy(image.convert("P", palette=Image.Palette.ADAPTIVE), image) == {"copy": True, "same_size": True, "mean_abs_diff": 0.0}
    changed = image.copy()
    changed.putpixel((3, 3), (10, 20, 31))
    assert pixel_copy(changed, image)["copy"] is False
    bigger = pixel_copy(image.resize((32, 32)), image)
    assert bigger == {"copy": False, "same_size": False, "mean_abs_diff": 0.0}


# ------------------------------------------------------------------------------ aggregation by hand


def test_aggregation_from_records_by_hand(tmp_path):
    keys = [
        "implicit_pattern/001",  # generation 0
        "symbolic_constraint/sc01",  # 1
        "visual_constraint/vc01",  # 2: two hints
        "multi_semantic/ms01",  # 3: no hint
        "prior_conflicting/pc01",  # 4: degenerate image -> missing output, scored 0
        "prior_conflicting/pc02",  # 5: generation fails -> unscored
    ]
    rc = {0: [2, 2, 1], 1: [0, 1, 0], 2: [1, 1, 2], 3: [1, 2, 2]}
    aq = {0: [1, 1, 1], 1: [2, 2, 1], 2: [0, 0, 1], 3: [2, 1, 1]}
    vc = {0: [2, 1, 1], 1: [2, 2, 2]}

    def script(metric: str, generation: int, repeat: int, prompt: str) -> str:
        if metric == "copy":
            return "Copy: 1"  # not a copy
        if metric == "vc" and generation == 2:
            value = [2, 2, 2][repeat] if "fountain" in prompt else [0, 0, 1][repeat]
        else:
            value = {"rc": rc, "aq": aq, "vc": vc}[metric][generation][repeat]
        return f"{next(k for k, v in LABELS.items() if v == metric)}: {value}"

    backend = ScriptedGenius(script, degenerate=[4], broken=[5])
    options = GeniusOptions()
    records = run_cases(backend, keys, options, tmp_path)
    # Items (x50): 001 rc 2 (100) aq 1 (50) vc 1 (50); sc01 rc 0 aq 2 (100) vc 2 (100);
    # vc01 rc 1 (50) aq 0 vc mean(2, 0) = 1 (50); ms01 rc 2 (100) aq 1 (50); pc01 missing: 0, 0, 0.
    assert [r["scores"] and r["scores"]["rc"] for r in records] == [100.0, 0.0, 50.0, 100.0, 0.0, None]
    assert records[4]["item"]["output_missing"] is True and records[5]["unscored"] == "generation failed (backend)"
    assert records[5]["item"] is None

    s = PROTOCOL.summarize(records, options)
    assert s["rc"] == pytest.approx((100 + 0 + 50 + 100 + 0) / 5)
    assert s["vc"] == pytest.approx((50 + 100 + 50 + 0) / 4)
    assert s["aq"] == pytest.approx((50 + 100 + 0 + 50 + 0) / 5)
    assert s["overall"] == pytest.approx(0.6 * 50 + 0.35 * 50 + 0.05 * 40)
    assert s["scored"] == {"rc": 5, "vc": 4, "aq": 5}
    assert s["missing_outputs"] == 1 and s["unscored"] == {"generation failed (backend)": 1}
    dims = s["dimensions"]
    assert (dims["visual_constraint"]["rc"], dims["visual_constraint"]["vc"], dims["visual_constraint"]["aq"]) == (50.0, 50.0, 0.0)
    assert dims["prior_conflicting"] == {"items": 1, "cases": 2, "scored": {"rc": 1, "vc": 1, "aq": 1}, "applicable": {"rc": 2, "vc": 2, "aq": 2},
                                         "missing_outputs": 1, "rc": 0.0, "vc": 0.0, "aq": 0.0, "judge_failures": {}}
    assert dims["multi_semantic"]["vc"] is None and dims["multi_semantic"]["applicable"]["vc"] == 0  # VC does not apply there
    # every case counts where its metric applies (the unscored pc02 too); the five items have no judge failure
    assert s["applicable"] == {"rc": 6, "vc": 5, "aq": 6} and s["complete"] == 5
    main_row = PROTOCOL.tables({"scores": s, "bindings": {"generate": "scripted"}})[0][2][0]
    assert main_row[:5] == ["scripted", s["overall"], 100.0, 50.0, 50.0]


# ------------------------------------------------------------------------------ loading


def test_cases_with_missing_context_images_are_skipped_with_a_reason(tmp_path):
    root = tmp_path / "dataset"
    shutil.copytree(SAMPLE / "symbolic_constraint", root / "symbolic_constraint")
    (root / "symbolic_constraint" / "images" / "sc_basket.png").unlink()
    loaded = PROTOCOL.load(root, GeniusOptions())
    assert [t.key for t in loaded.cases] == ["symbolic_constraint/sc02"]
    [skipped] = loaded.skipped
    assert skipped.case_id == "symbolic_constraint/sc01" and "sc_basket.png" in skipped.reason

    result = evaluate(RunRequest(protocol="genius", out=tmp_path / "run", cache=tmp_path / "cache", cases=root,
                                 model="sim/umm", progress=False))
    assert result.summary.counts.skipped_cases == 1 and result.summary.counts.cases == 1
    assert result.summary.skipped_cases[0].case_id == "symbolic_constraint/sc01"


def test_a_dimension_folder_or_its_file_can_be_given(tmp_path):
    folder = SAMPLE / "multi_semantic"
    assert [t.key for t in PROTOCOL.load(folder, GeniusOptions()).cases] == ["multi_semantic/ms01", "multi_semantic/ms02"]
    assert len(PROTOCOL.load(folder / "test_data.json", GeniusOptions()).cases) == 2
    stray = tmp_path / "cases.json"
    stray.write_text("[]")
    with pytest.raises(Exception, match="test_data.json"):
        PROTOCOL.load(stray, GeniusOptions())


def test_cli_runs_genius_and_prints_the_case_schema(tmp_path, capsys):
    from umni.cli import main

    out = tmp_path / "run"
    assert main(["run", "genius", "--model", "sim/umm", "--out", str(out), "--cache", str(tmp_path / "cache"), "--limit", "2", "--quiet"]) == 0
    assert json.loads((out / "summary.json").read_text())["counts"]["cases"] == 2
    capsys.readouterr()
    assert main(["cases", "schema", "genius"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["type"] == "array" and "rc_hint" in schema["$defs"]["GeniusRecord"]["properties"]
