"""The AEGIS protocol end to end: graphs per task and variant, runs with sim/umm and with a scripted
test backend, failure accounting (inference vs evaluation), skipped cases, the real annotation file."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest
from PIL import Image

from tests.support.shared_data import shared_data
from umni.backends import Backend
from umni.backends.bindings import Bindings
from umni.backends.roles import MODEL_ROLES, ImageReply, TextReply
from umni.cli import main as cli_main
from umni.engine.runner import RetryPolicy, Runner
from umni.graph.graph import ImageFile, Ref
from umni.run.evaluation import RunRequest, evaluate
from umni.store.cache import Cache
from umni.util.errors import BackendError, ConfigError
from umni.util.spec import Spec
from umni_cases import bundled
from umni_graphs.aegis import PROTOCOL
from umni_graphs.aegis import prompts as P
from umni_graphs.aegis.cases import DOMAIN_GROUPS, TASKS

BUNDLED = bundled("aegis") / "annotation.json"
NO_RETRY = RetryPolicy(max_attempts=1, initial_wait=0, max_wait=0, jitter=0)


def options(**pairs: str):
    return PROTOCOL.parse_options(pairs)


@pytest.fixture(scope="module")
def bundled_cases():
    loaded = PROTOCOL.load(BUNDLED, options())
    return {c.id: c for c in loaded.cases}


def first_of(cases, task):
    return next(c for c in cases.values() if c.task == task)


# ------------------------------------------------------------------------------------------------
# A scripted backend: plays every role, says exactly what a test tells it, records what it saw


class ScriptedAegis(Backend):
    """Answers checklists with `judge_answers`, plans/rewrites with fixed markers, writes
    `answer_text` otherwise; draws a flat 32x32 image; `fail_generate` makes those generate calls
    (1-based call numbers) raise a non-retryable BackendError."""

    provider = "aegis-scripted"
    roles = frozenset(MODEL_ROLES)

    def __init__(self, *, judge_answers: Sequence[str] = ("Y",), answer_text: str = "It is five.", fail_generate: Sequence[int] = ()) -> None:
        super().__init__(Spec(provider="aegis-scripted", name="t"))
        self.judge_answers = list(judge_answers)
        self.answer_text = answer_text
        self.fail_generate = set(fail_generate)
        self.calls: Counter[str] = Counter()
        self.prompts: list[tuple[str, list[object]]] = []

    async def respond(self, parts, *, max_tokens: int = 512, seed: int = 0) -> TextReply:
        text = "\n".join(p for p in parts if isinstance(p, str))
        self.prompts.append(("respond", list(parts)))
        if "answer_list" in text:
            self.calls["judge"] += 1
            n = len(self.judge_answers)
            return TextReply(json.dumps({"answer_list": self.judge_answers, "reason_list": [f"reason {i}" for i in range(1, n + 1)]}))
        if "Think through" in text:
            self.calls["plan"] += 1
            return TextReply("PLAN-XYZ: the answer is five")
        if "Rewrite it as an explicit request" in text:
            self.calls["rewrite"] += 1
            return TextReply("```\nRewritten request: REWRITTEN-ABC\n```")
        self.calls["respond"] += 1
        return TextReply(self.answer_text)

    async def generate(self, parts, *, seed: int = 0) -> ImageReply:
        self.calls["generate"] += 1
        self.prompts.append(("generate", list(parts)))
        if self.calls["generate"] in self.fail_generate:
            raise BackendError("scripted generate failure", retryable=False)
        return ImageReply(Image.new("RGB", (32, 32), (10 * self.calls["generate"], 50, 90)))

    async def edit(self, images, instruction: str, *, seed: int = 0) -> ImageReply:
        self.calls["edit"] += 1
        self.prompts.append(("edit", [*images, instruction]))
        return ImageReply(Image.new("RGB", (32, 32), (200, 10, 10)))

    def prompt_text(self, kind: str, index: int = -1) -> str:
        chosen = [parts for k, parts in self.prompts if k == kind][index]
        return "\n".join(p for p in chosen if isinstance(p, str))


def run_case(case, opts, backend: ScriptedAegis, tmp_path: Path) -> dict:
    graph = PROTOCOL.build(case, opts)
    cache = Cache(tmp_path / "cache")
    try:
        runner = Runner(Bindings({role: backend for role in MODEL_ROLES}), cache, retry=NO_RETRY)
        outcomes = anyio.run(runner.run_graph, graph)
    finally:
        cache.close()
    return PROTOCOL.record(case, outcomes, opts)


# ------------------------------------------------------------------------------------------------
# Running the bundled set with sim/umm


def test_run_bundled_with_sim(tmp_path):
    result = evaluate(RunRequest(protocol="aegis", out=tmp_path / "run", cache=tmp_path / "cache", model="sim/umm", progress=False))
    summary = result.summary
    records = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert len(records) == 8 and summary.counts.cases == 8 and summary.counts.skipped_cases == 0
    assert Counter(r["task"] for r in records) == {t: 2 for t in TASKS}
    assert all(r["status"] == "scored" for r in records)
    for r in records:
        assert len(r["checklist"]) >= 1 and all(item["answer"] in ("Y", "N") for item in r["checklist"])
        yes = sum(item["answer"] == "Y" for item in r["checklist"])
        assert r["score"] == pytest.approx(yes / len(r["checklist"]))
    scores = summary.scores
    assert set(scores["main_table"]) == {*TASKS, "overall"}
    for row in scores["main_table"].values():
        assert set(row) == {*DOMAIN_GROUPS, "overall", "scored", "inference_failures", "evaluation_failures"}
    # Overall is the mean over every scored case (data-weighted), in percent.
    assert scores["overall"] == pytest.approx(100 * sum(r["score"] for r in records) / 8, abs=0.01)
    for task in TASKS:
        mine = [r["score"] for r in records if r["task"] == task]
        assert scores["main_table"][task]["overall"] == pytest.approx(100 * sum(mine) / len(mine), abs=0.01)
        assert scores["main_table"][task]["scored"] == 2
    assert scores["main_table"]["overall"]["scored"] == 8
    assert scores["main_table"]["understanding"]["Humanities"] is None  # no such case in the bundled set
    assert sum(v["scored"] for v in scores["by_category"].values()) == 8
    assert sum(v["scored"] for v in scores["by_reasoning_type"].values()) == 8
    assert scores["cases"] == {"total": 8, "scored": 8, "inference_failures": 0, "evaluation_failures": 0}
    # Interleaved answers from sim carry <image> markers, each drawn by the generate role.
    for r in records:
        if r["task"] == "interleaved":
            assert r["output"]["markers"] >= 1 and len(r["output"]["images"]) == min(r["output"]["markers"], 6)
    on_disk = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert on_disk["scores"] == scores.root
    html = (tmp_path / "run" / "report.html").read_text()
    assert "AEGIS by task and domain" in html and "By reasoning type" in html and "Checklist · score" in html


def test_cli_run_with_an_option(tmp_path):
    code = cli_main(["run", "aegis", "--model", "sim/umm", "--out", str(tmp_path / "run"), "--cache", str(tmp_path / "cache"),
                     "--option", "prompt=clear_prompt", "--limit", "2", "--quiet"])  # fmt: skip
    assert code == 0
    records = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert len(records) == 2 and all(r["prompt_variant"] == "clear_prompt" and r["prompt"] == r["clear_prompt"] for r in records)


@pytest.mark.parametrize(
    "pairs, extra_calls",
    [
        ({"reasoning": "plugin"}, {"understand": 8}),
        ({"reasoning": "plugin", "reasoning_role": "judge"}, {"judge": 8}),
        ({"rewrite": "self"}, {"understand": 8}),
        ({"rewrite": "cross"}, {"judge": 8}),
        ({"condition_on_previous": "true"}, {}),
        ({"prompt": "clear_prompt"}, {}),
    ],
)
def test_variants_run_with_sim(tmp_path, pairs, extra_calls):
    # Base calls on the bundled set: 4 text answers (2 understanding + 2 interleaved), 8 judgements,
    # 2 edits, and 2 generations plus one per drawn marker. Variants add one call per case.
    result = evaluate(RunRequest(protocol="aegis", out=tmp_path / "run", cache=tmp_path / "cache", model="sim/umm",
                                 options=pairs, progress=False))  # fmt: skip
    calls = result.summary.calls
    records = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert all(r["status"] == "scored" for r in records)
    assert calls["understand"] == 4 + extra_calls.get("understand", 0)
    assert calls["judge"] == 8 + extra_calls.get("judge", 0)
    assert calls["edit"] == 2
    # Equal generate inputs are computed once (sim is deterministic), so count distinct images.
    drawn = {sha for r in records if r["task"] in ("generation", "interleaved") for sha in r["output"]["images"]}
    assert calls["generate"] == len(drawn) and len(drawn) >= 2 + 2
    if "reasoning" in pairs:
        assert all(r["plan"] for r in records)
    if "rewrite" in pairs:
        assert all(r["rewrite"] for r in records)


# ------------------------------------------------------------------------------------------------
# Graph shapes


def shape(graph) -> dict[str, tuple[str, str | None]]:
    return {nid: (n.kind, n.role) for nid, n in graph.nodes.items()}


def test_graph_per_task(bundled_cases):
    opts = options(max_images="2")
    assert shape(PROTOCOL.build(first_of(bundled_cases, "understanding"), opts)) == {
        "answer": ("respond", "understand"), "judge": ("judge", "judge")}  # fmt: skip
    assert shape(PROTOCOL.build(first_of(bundled_cases, "generation"), opts)) == {
        "image": ("generate", "generate"), "judge": ("judge", "judge")}  # fmt: skip
    editing = first_of(bundled_cases, "editing")
    graph = PROTOCOL.build(editing, opts)
    assert shape(graph) == {"image": ("edit", "edit"), "judge": ("judge", "judge")}
    assert graph.nodes["image"].images == tuple(ImageFile(editing.image_path(p)) for p in editing.input_image)
    interleaved = PROTOCOL.build(first_of(bundled_cases, "interleaved"), opts)
    assert shape(interleaved) == {
        "answer": ("respond", "understand"),
        "image1/prompt": ("compute", None), "image1": ("generate", "generate"),
        "image2/prompt": ("compute", None), "image2": ("generate", "generate"),
        "judge/output": ("compute", None), "judge": ("judge", "judge"),
    }  # fmt: skip
    judge = interleaved.nodes["judge"]
    assert Ref("image1", optional=True) in judge.prompt and Ref("judge/output") in judge.prompt
    assert Ref("image1") not in interleaved.nodes["image2"].prompt  # not conditioned by default


def test_graph_variants(bundled_cases):
    case = first_of(bundled_cases, "understanding")
    plugin = PROTOCOL.build(case, options(reasoning="plugin"))
    assert shape(plugin) == {"plan": ("respond", "understand"), "answer": ("respond", "understand"), "judge": ("judge", "judge")}
    answer_prompt = plugin.nodes["answer"].prompt
    assert answer_prompt[-2:] == (P.PLAN_HEADER, Ref("plan"))
    assert shape(PROTOCOL.build(case, options(reasoning="plugin", reasoning_role="judge")))["plan"] == ("respond", "judge")

    rewrite = PROTOCOL.build(case, options(rewrite="self"))
    assert shape(rewrite) == {
        "rewrite": ("respond", "understand"), "rewrite/text": ("compute", None),
        "answer": ("respond", "understand"), "judge": ("judge", "judge"),
    }  # fmt: skip
    assert rewrite.nodes["answer"].prompt[-1] == Ref("rewrite/text")
    assert case.prompt not in " ".join(p for p in rewrite.nodes["answer"].prompt if isinstance(p, str))
    assert shape(PROTOCOL.build(case, options(rewrite="cross")))["rewrite"] == ("respond", "judge")
    assert shape(PROTOCOL.build(case, options(rewrite="cross", rewrite_role="understand")))["rewrite"] == ("respond", "understand")

    clear = PROTOCOL.build(case, options(prompt="clear_prompt"))
    given = " ".join(p for p in clear.nodes["answer"].prompt if isinstance(p, str))
    assert "Pythagorean" in given and "How long is the side" not in given

    editing = PROTOCOL.build(first_of(bundled_cases, "editing"), options(reasoning="plugin"))
    assert shape(editing)["plan"] == ("respond", "understand") and Ref("plan") in editing.nodes["image"].prompt

    chained = PROTOCOL.build(first_of(bundled_cases, "interleaved"), options(condition_on_previous="true", max_images="3"))
    assert Ref("image1") in chained.nodes["image2"].prompt and Ref("image2") in chained.nodes["image3"].prompt
    assert Ref("image1") not in chained.nodes["image1"].prompt


@pytest.mark.parametrize(
    "pairs, message",
    [
        ({"rewrite": "self", "prompt": "clear_prompt"}, "cannot be combined"),
        ({"rewrite": "self", "reasoning": "plugin"}, "choose one"),
        ({"reasoning_role": "judge"}, "only with reasoning=plugin"),
        ({"rewrite": "self", "rewrite_role": "understand"}, "only with rewrite=cross"),
        ({"reasoning": "plugin", "reasoning_role": "generate"}, "writes text"),
        ({"max_images": "0"}, "max_images"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_bad_options_are_refused(pairs, message):
    with pytest.raises(ConfigError, match=message):
        PROTOCOL.parse_options(pairs)


# ------------------------------------------------------------------------------------------------
# Scripted runs: scores, evaluation failures, inference failures


def test_scored_case_and_plan_flow(bundled_cases, tmp_path):
    case = bundled_cases[1]  # understanding, 3 checklist items
    backend = ScriptedAegis(judge_answers=["Y", "N", "Y"])
    record = run_case(case, options(reasoning="plugin"), backend, tmp_path)
    assert record["status"] == "scored" and record["score"] == pytest.approx(2 / 3)
    assert [i["answer"] for i in record["checklist"]] == ["Y", "N", "Y"]
    assert [i["reason"] for i in record["checklist"]] == ["reason 1", "reason 2", "reason 3"]
    assert record["plan"] == "PLAN-XYZ: the answer is five"
    acting = [parts for kind, parts in backend.prompts if kind == "respond"][1]
    assert "PLAN-XYZ: the answer is five" in acting and P.PLAN_HEADER in " ".join(p for p in acting if isinstance(p, str))
    summary = PROTOCOL.summarize([record], options())
    assert summary["overall"] == pytest.approx(66.67) and summary["main_table"]["understanding"]["Daily life"] == pytest.approx(66.67)


def test_wrong_length_judgement_is_an_evaluation_failure(bundled_cases, tmp_path):
    case = bundled_cases[1]  # 3 checklist items; the judge answers 2
    backend = ScriptedAegis(judge_answers=["Y", "Y"])
    record = run_case(case, options(), backend, tmp_path)
    retries = NO_RETRY.parse_retries
    assert backend.calls["judge"] == 1 + retries  # asked again a bounded number of times
    assert record["status"] == "evaluation_failure" and record["score"] is None
    assert record["nodes"]["judge"]["failure"]["kind"] == "parse"
    assert "2 answers for 3 checklist items" in record["detail"] and record["judge_attempts"] == 1 + retries
    assert all(i["answer"] is None for i in record["checklist"])
    other = run_case(bundled_cases[0], options(), ScriptedAegis(judge_answers=["Y", "N"]), tmp_path / "b")
    summary = PROTOCOL.summarize([record, other], options())
    assert summary["cases"] == {"total": 2, "scored": 1, "inference_failures": 0, "evaluation_failures": 1}
    assert summary["overall"] == 50.0  # the failed case is not a 0
    assert summary["by_category"]["traffic"] == {"score": None, "std": None, "scored": 0, "inference_failures": 0, "evaluation_failures": 1}
    assert summary["evaluation_failed_ids"] == [1]
    checklist = PROTOCOL.views(record)[-1]
    assert checklist.title == "Checklist · evaluation failure" and checklist.verdict is None


def test_failed_generation_is_an_inference_failure_and_the_judge_is_not_called(bundled_cases, tmp_path):
    case = first_of(bundled_cases, "generation")
    backend = ScriptedAegis(judge_answers=["Y"] * len(case.checklist), fail_generate=[1])
    record = run_case(case, options(), backend, tmp_path)
    assert backend.calls["judge"] == 0
    assert record["status"] == "inference_failure" and record["score"] is None
    assert record["nodes"]["judge"]["status"] == "blocked" and "image" in record["detail"]
    summary = PROTOCOL.summarize([record], options())
    assert summary["main_table"]["generation"]["inference_failures"] == 1 and summary["overall"] is None


def test_empty_answer_is_an_inference_failure(bundled_cases, tmp_path):
    backend = ScriptedAegis(judge_answers=["Y", "Y"], answer_text="   ")
    record = run_case(bundled_cases[0], options(), backend, tmp_path)
    assert backend.calls["judge"] == 0 and record["status"] == "inference_failure"
    assert record["nodes"]["judge"]["status"] == "skipped"


def test_interleaved_markers_are_drawn_and_judged(bundled_cases, tmp_path):
    case = bundled_cases[6]  # interleaved, 5 items, no input image
    text = "First the chrysalis <image> then the butterfly <image> and at last eggs <image>."
    backend = ScriptedAegis(judge_answers=["Y", "Y", "N", "Y", "N"], answer_text=text)
    record = run_case(case, options(max_images="2", condition_on_previous="true"), backend, tmp_path)
    assert record["status"] == "scored" and record["score"] == pytest.approx(3 / 5)
    assert backend.calls["generate"] == 2 and len(record["output"]["images"]) == 2 and record["output"]["markers"] == 3
    first, second = [parts for kind, parts in backend.prompts if kind == "generate"]
    assert "[DRAW THIS PICTURE] then the butterfly [picture 2]" in first[-1]
    assert "[picture 1] then the butterfly [DRAW THIS PICTURE]" in second[-1]
    assert sum(isinstance(p, Image.Image) for p in first) == 0 and sum(isinstance(p, Image.Image) for p in second) == 1
    judge_parts = [parts for kind, parts in backend.prompts if kind == "respond"][-1]
    judge_text = "\n".join(p for p in judge_parts if isinstance(p, str))
    assert "[output image 1] then the butterfly [output image 2]" in judge_text
    assert "[output image 3: not drawn, over the limit of 2 pictures]" in judge_text
    assert sum(isinstance(p, Image.Image) for p in judge_parts) == 2 + 2  # two references, two drawn
    views = PROTOCOL.views(record)
    assert [v.title for v in views][:3] == ["Request", "Output", "Output image 2"]
    assert views[1].image == record["output"]["images"][0] and views[2].image == record["output"]["images"][1]
    checklist = views[-1]
    assert checklist.rows[2][1] == "N · reason 3" and checklist.title == "Checklist · score 0.60"


def test_interleaved_missing_picture_blocks_the_judge(bundled_cases, tmp_path):
    backend = ScriptedAegis(judge_answers=["Y"] * 5, answer_text="A <image> and B <image>.", fail_generate=[2])
    record = run_case(bundled_cases[6], options(), backend, tmp_path)
    assert backend.calls["judge"] == 0 and record["status"] == "inference_failure"
    assert record["nodes"]["image2"]["failure"]["kind"] == "backend" and "image2" in record["detail"]


def test_rewrite_text_replaces_the_prompt(bundled_cases, tmp_path):
    case = first_of(bundled_cases, "editing")
    backend = ScriptedAegis(judge_answers=["Y"] * len(case.checklist))
    record = run_case(case, options(rewrite="cross"), backend, tmp_path)
    assert record["rewrite"] == "REWRITTEN-ABC" and record["status"] == "scored"
    edit_parts = [parts for kind, parts in backend.prompts if kind == "edit"][0]
    assert edit_parts[-1] == "REWRITTEN-ABC" and isinstance(edit_parts[0], Image.Image)


# ------------------------------------------------------------------------------------------------
# Loading: skipped cases, quirks, the real file


def test_missing_input_image_skips_the_case(tmp_path):
    folder = tmp_path / "aegis"
    shutil.copytree(BUNDLED.parent, folder, ignore=shutil.ignore_patterns("*.py"))
    (folder / "images" / "traffic" / "1_1_input.png").unlink()
    loaded = PROTOCOL.load(folder, options())
    assert [s.case_id for s in loaded.skipped] == ["1"] and "traffic/1_1_input.png" in loaded.skipped[0].reason
    assert len(loaded.cases) == 7
    result = evaluate(RunRequest(protocol="aegis", cases=folder, out=tmp_path / "run", cache=tmp_path / "cache", model="sim/umm", progress=False))
    assert result.summary.counts.skipped_cases == 1 and result.summary.counts.cases == 7
    assert result.summary.skipped_cases[0].case_id == "1"
    assert result.summary.scores["cases"]["total"] == 7


def test_real_file_loads_with_notes_and_skips_cases_without_images(capsys):
    real = shared_data("aegis", "annotation.json")
    loaded = PROTOCOL.load(real, options())
    raw = json.loads(real.read_text())
    with_images = {str(r["id"]) for r in raw if r["input_image"] or r["ref_image"]}
    assert {s.case_id for s in loaded.skipped} == with_images and len(with_images) == 1028
    # Only the 22 text-only understanding cases (no input image, no reference image) remain runnable.
    assert len(loaded.cases) == 22 and all(c.task == "understanding" and not c.input_image and not c.ref_image for c in loaded.cases)
    notes = [(n.record, n.field, n.message) for n in loaded.notes]
    assert any(r == "576" and "parsed error" in m for r, _, m in notes) and any(r == "728" and "parsed error" in m for r, _, m in notes)
    assert sum("[Imgae]" in m for _, _, m in notes) == 2
    assert any("casual reasoning" in m for _, _, m in notes)
    assert cli_main(["cases", "check", "aegis", str(real)]) == 0
    out = capsys.readouterr().out
    assert "22 cases valid" in out and "record 576" in out and "will be skipped" in out
