"""The GIR-Bench protocol: loading a case folder, per-task graphs, scores, summary, and offline runs.

The detect and embed roles have no offline model, so two TEST-ONLY backends stand in for them here:
`SceneDetector` reads the scene sim/umm embeds in the images it draws and returns the boxes sim drew
its things at, and `PixelEmbedder` turns an image into a coarse colour grid. Neither is a product
feature; they make the detect/embed tasks runnable end to end with checkable results.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Sequence
from pathlib import Path

import anyio
import numpy as np
import pytest
from PIL import Image, ImageDraw

from umni.backends.contract import Backend
from umni.backends.roles import DETECT, EMBED, Detection
from umni.cli import main as cli_main
from umni.engine.keys import node_key
from umni.run.evaluation import RunRequest, evaluate_async, prepare
from umni.store.runfolder import RunFolder
from umni.util.errors import ConfigError, InputError
from umni.util.policy import RetryPolicy
from umni.util.spec import Spec
from umni_adapters.sim_render import layout
from umni_adapters.sim_scene import SCENE_KEY, Scene
from umni_cases import bundled
from umni_graphs.girbench import PROTOCOL, GirOptions
from umni_graphs.girbench.metrics import frechet_distance_between, label_key, normalized_fid
from umni_graphs.girbench.scoring import (
    puzzle_score,
    score_numerical,
    score_perception,
    score_similarity,
    score_spatial,
    score_sudoku,
    score_text,
)

BUNDLED = bundled("girbench")


# ------------------------------------------------------------------------------------------------
# Test-only tool backends


class SceneDetector(Backend):
    """TEST ONLY: detections read from the scene sim/umm embeds in its images (no pixels involved)."""

    provider = "test-scene"
    roles = frozenset({DETECT})

    async def detect(self, image: Image.Image, labels: Sequence[str]) -> list[Detection]:
        scene = Scene.from_json(image.info[SCENE_KEY])
        places = layout(scene, seed=0)
        found = []
        for thing in scene.things:
            x, y, r = places[thing.name]
            names = {label_key(thing.name)} | {label_key(f"{c} {thing.name}") for c in thing.colours}
            for label in labels:
                if label_key(label) in names:
                    found.append(Detection(label, (x - r, y - r, x + r, y + r), 1.0))
        return found


class PixelEmbedder(Backend):
    """TEST ONLY: a 4x4 grid of mean colours (48 values) plus a constant, as a feature vector."""

    provider = "test-pixels"
    roles = frozenset({EMBED})

    async def embed(self, images: Sequence[Image.Image]) -> np.ndarray:
        rows = []
        for image in images:
            grid = np.asarray(image.convert("RGB").resize((4, 4), Image.Resampling.BOX), dtype=np.float64) / 255.0
            rows.append(np.concatenate([grid.ravel(), [1.0]]))
        return np.array(rows)


TEST_TOOLS = {"test-scene/boxes": SceneDetector, "test-pixels/grid": PixelEmbedder}


def run(tmp_path: Path, *, cases: Path | None = None, roles=(), options=None, model="sim/umm", retry=RetryPolicy()):
    shared = {spec: cls(Spec.parse(spec)) for spec, cls in TEST_TOOLS.items()}
    request = RunRequest(
        protocol="girbench",
        out=tmp_path / "run",
        cache=tmp_path / "cache",
        cases=cases,
        model=model,
        roles=list(roles),
        # these tests exercise the embed-role path (features from the run's embed role, umni's
        # deviation); the official extractors run in tests/fidelity/test_girbench_official.py
        options={"features": "embed", **(options or {})},
        retry=retry,
        progress=False,
    )
    prepared = prepare(request, shared=shared)
    return anyio.run(lambda: evaluate_async(request, prepared))


def records_of(result) -> dict[str, dict]:
    lines = (result.out / "results.jsonl").read_text().splitlines()
    return {r["case_id"]: r for r in map(json.loads, lines)}


# ------------------------------------------------------------------------------------------------
# Options and loading


def test_options_normalise_tasks_and_roles():
    opts = PROTOCOL.parse_options({"tasks": "TextRendering, uni,visual_logic,text", "skip_roles": "embed,OCR"})
    assert opts.tasks == "uni,text,sudoku"  # table order, aliases mapped, repeats dropped
    assert opts.skip_roles == "ocr,embed"
    with pytest.raises(ConfigError, match="unknown task 'colouring'"):
        PROTOCOL.parse_options({"tasks": "colouring"})
    with pytest.raises(ConfigError, match="unknown role"):
        PROTOCOL.parse_options({"skip_roles": "painter"})


def test_adapt_skips_every_unbound_role():
    opts = PROTOCOL.adapt(GirOptions(tasks="text"), ["understand", "generate", "edit", "judge"])
    assert opts.tasks == "text" and opts.skip_roles == "ocr,detect,embed"


def test_bundled_folder_holds_every_task_in_the_official_layout():
    case_set = PROTOCOL.load(BUNDLED, GirOptions())
    by_task: dict[str, int] = {}
    for case in case_set.cases:
        by_task[case.task] = by_task.get(case.task, 0) + 1
    assert by_task == {"uni": 6, "numerical": 3, "spatial": 3, "text": 3, "puzzle": 3, "sudoku": 2, "perception": 2}
    assert case_set.skipped == [] and case_set.notes == []
    fox = next(c for c in case_set.cases if c.id == "uni/Zoology/1")
    assert fox.prompt.startswith("A small wild canine")
    # the other Zoology entity is the first distractor; the answer sits where the hash put it
    assert fox.vqa.options[fox.vqa.answer] == "red fox" and "zebra" in fox.vqa.options
    assert len(fox.vqa.options) == 4 and fox.vqa.image.name == "ref_1.png"


def test_skip_roles_turns_tasks_into_counted_skips(tmp_path):
    case_set = PROTOCOL.load(BUNDLED, GirOptions(skip_roles="detect,embed", features="embed"))
    reasons = {s.case_id: s.reason for s in case_set.skipped}
    assert sorted(reasons) == [f"numerical/{i}" for i in (1, 2, 3)] + [f"puzzle/00{i}" for i in (1, 2, 3)] + [
        f"spatial/{i}" for i in (1, 2, 3)
    ]
    assert reasons["puzzle/001"] == "embed role not bound (skip_roles)"
    # Uni still runs its understanding side, without generation nodes
    uni = next(c for c in case_set.cases if c.task == "uni")
    assert set(PROTOCOL.build(uni, GirOptions(skip_roles="detect,embed", features="embed")).nodes) == {"vqa"}
    # nothing left to score is an input error (exit 2), naming why every case was skipped
    with pytest.raises(InputError, match=r"no GIR-Bench case can be scored: 6 case\(s\): understand role not bound \(skip_roles\); embed role not bound"):
        PROTOCOL.load(BUNDLED, GirOptions(tasks="uni", skip_roles="embed,understand", features="embed"))


def test_missing_images_and_absent_tasks(tmp_path):
    root = tmp_path / "cases"
    shutil.copytree(BUNDLED / "VisualLogic", root / "VisualLogic")
    (root / "VisualLogic" / "answer" / "2.png").unlink()
    case_set = PROTOCOL.load(root, GirOptions())
    assert [c.id for c in case_set.cases] == ["sudoku/1"]
    assert case_set.skipped[0].case_id == "sudoku/2" and "answer/2.png" in case_set.skipped[0].reason
    with pytest.raises(InputError, match="text needs TextRendering.json"):
        PROTOCOL.load(root, GirOptions(tasks="sudoku,text"))
    with pytest.raises(InputError, match="folder"):
        PROTOCOL.load(BUNDLED / "prompt" / "TextRendering.json", GirOptions())
    with pytest.raises(InputError, match="no GIR-Bench task found"):
        PROTOCOL.load(tmp_path / "cases" / "VisualLogic" / "sudoku", GirOptions())


def puzzle_copy(root: Path, inputs: str) -> Path:
    """The bundled Visual Puzzle set with its shuffled inputs in a folder named `inputs`."""
    shutil.copytree(BUNDLED / "VisualPuzzle" / "solution", root / "VisualPuzzle" / "solution")
    shutil.copytree(BUNDLED / "VisualPuzzle" / "question", root / "VisualPuzzle" / inputs)
    return root


def test_puzzle_inputs_are_found_beside_the_solutions_whatever_their_folder_is_named(tmp_path):
    """The official evaluation reads only VisualPuzzle/solution/; the shuffled inputs are the one
    other folder of numbered images there, so a copy naming it input/ runs every puzzle."""
    root = puzzle_copy(tmp_path / "cases", "input")
    case_set = PROTOCOL.load(root, GirOptions(features="embed"))
    assert [c.id for c in case_set.cases] == ["puzzle/001", "puzzle/002", "puzzle/003"] and case_set.skipped == []
    assert [c.data.question_image for c in case_set.cases] == [root / "VisualPuzzle" / "input" / f"00{i}.png" for i in (1, 2, 3)]
    # inputs named by the bare id (7.png) pair with the solution 007.png, as the official names do
    (root / "VisualPuzzle" / "input" / "002.png").rename(root / "VisualPuzzle" / "input" / "2.png")
    second = PROTOCOL.load(root, GirOptions(features="embed")).cases[1]
    assert second.data.question_image == root / "VisualPuzzle" / "input" / "2.png"


def test_puzzle_inputs_option_names_the_folder(tmp_path):
    root = puzzle_copy(tmp_path / "cases", "input")
    shutil.copytree(root / "VisualPuzzle" / "input", root / "VisualPuzzle" / "shuffled")
    with pytest.raises(InputError, match=r"input/, shuffled/.*--option puzzle_inputs="):
        PROTOCOL.load(root, GirOptions(features="embed"))
    chosen = PROTOCOL.load(root, PROTOCOL.parse_options({"features": "embed", "puzzle_inputs": "shuffled"}))
    assert {c.data.question_image.parent for c in chosen.cases} == {root / "VisualPuzzle" / "shuffled"}
    elsewhere = puzzle_copy(tmp_path / "other", "question") / "VisualPuzzle" / "question"
    chosen = PROTOCOL.load(root, PROTOCOL.parse_options({"features": "embed", "puzzle_inputs": str(elsewhere)}))
    assert {c.data.question_image.parent for c in chosen.cases} == {elsewhere}
    with pytest.raises(InputError, match="puzzle_inputs"):
        PROTOCOL.load(root, PROTOCOL.parse_options({"features": "embed", "puzzle_inputs": "absent"}))
    # the default settings leave summaries as they were: an unset option is not written out
    assert "puzzle_inputs" not in PROTOCOL.parse_options({}).model_dump()


def test_a_skipped_puzzle_says_which_folders_were_tried(tmp_path):
    root = puzzle_copy(tmp_path / "cases", "input")
    (root / "VisualPuzzle" / "input" / "003.png").unlink()
    case_set = PROTOCOL.load(root, GirOptions(features="embed"))
    (skip,) = case_set.skipped
    assert skip.case_id == "puzzle/003"
    assert "VisualPuzzle/input/" in skip.reason and "--option puzzle_inputs=" in skip.reason
    # no folder of inputs at all: every folder looked at is named
    shutil.rmtree(root / "VisualPuzzle" / "input")
    (root / "VisualPuzzle" / "notes").mkdir()
    with pytest.raises(InputError, match=r"no input image.*VisualPuzzle/notes/.*--option puzzle_inputs="):
        PROTOCOL.load(root, GirOptions(features="embed", tasks="puzzle"))


def test_a_copy_with_an_input_folder_scores_every_puzzle(tmp_path):
    root = puzzle_copy(tmp_path / "cases", "input")
    result = run(tmp_path, cases=root, roles=["embed=test-pixels/grid"])
    assert result.summary.scores["metrics"]["puzzle"]["scored"] == 3


def test_perception_without_a_target_description_is_skipped(tmp_path):
    root = tmp_path / "cases"
    shutil.copytree(BUNDLED / "ReasoningPerception", root / "ReasoningPerception")
    (root / "ReasoningPerception.json").write_text(json.dumps([{"id": 2, "prompt": "the sun"}]))
    case_set = PROTOCOL.load(root, GirOptions())
    assert [c.id for c in case_set.cases] == ["perception/2"]
    assert "no target description for id 1" in case_set.skipped[0].reason


def test_score_nodes_key_on_the_ground_truth():
    case_set = PROTOCOL.load(BUNDLED, GirOptions(tasks="text"))
    first, second = (PROTOCOL.build(c, GirOptions()) for c in case_set.cases[:2])
    inputs = {"prompt": [], "images": [], "inputs": {"lines": "same-ocr-output"}}
    keys = [node_key(g.nodes["score"], None, inputs, 0) for g in (first, second)]
    assert keys[0] != keys[1]
    assert first.nodes["score"].params["const"]["truth"] == {"text": "Hello World"}


# ------------------------------------------------------------------------------------------------
# Scoring functions (hand-computed)


def det(label, box):
    return {"label": label, "box": list(box), "score": 0.9}


def test_numerical_needs_every_count_exact():
    truth = {"objects": ["chicken", "goat"], "number": [3, 2]}
    good = [det("chicken", (0, 0, 1, 1))] * 3 + [det("goat", (0, 0, 1, 1))] * 2 + [det("dog", (0, 0, 1, 1))]
    assert score_numerical(truth, detections=good)["score"] == 1.0
    short = score_numerical(truth, detections=good[:4])
    assert short["score"] == 0.0 and short["counts"] == {"chicken": 3, "goat": 1}


def test_spatial_uses_the_union_box_of_a_group():
    truth = {"labels": ["cat", "dog", "car"], "relations": [[["cat", "dog"], "left", "car"]]}
    boxes = [det("cat", (0, 0, 10, 10)), det("dog", (0, 40, 10, 50)), det("car", (60, 20, 70, 30))]
    assert score_spatial(truth, detections=boxes)["score"] == 1.0
    # car placed between the two animals: the group's union box overlaps it, so the relation fails
    boxes[2] = det("car", (2, 20, 12, 30))
    result = score_spatial(truth, detections=boxes)
    assert result["score"] == 0.0 and result["relations"] == [False] and result["all_detected_once"]


def test_text_score_drops_low_confidence_lines():
    lines = [{"text": "HELLO,", "box": [0, 0, 1, 1], "confidence": 0.9}, {"text": "World", "box": [0, 0, 1, 1], "confidence": 0.4}]
    result = score_text({"text": "Hello World"}, lines=lines)
    assert result["score"] == 0.5 and result["normalized"] == "hello"


def test_similarity_is_the_mean_cosine_over_references():
    assert score_similarity({}, generated=[1.0, 0.0], ref_000=[2.0, 0.0], ref_001=[0.0, 3.0])["score"] == 0.5


def test_sudoku_from_grids_and_from_reference_ocr():
    solution = [[1, 2], [2, 1]]
    grid = [[1, 0], [0, 0]]
    edited = Image.new("RGB", (200, 200))

    def line(text, x, y):  # a digit centred in cell (row y, col x) of a 2x2 grid on 200 px
        return {"text": text, "box": [x * 100 + 40, y * 100 + 40, x * 100 + 60, y * 100 + 60], "confidence": 0.99}

    answer = [line("1", 0, 0), line("2", 1, 0), line("2", 0, 1), line("1", 1, 1)]
    question = [line("1", 0, 0)]
    with_grids = {"grid_size": 2, "grid": grid, "solution": solution, "question_size": [200, 200], "answer_size": [200, 200]}
    # answer centres 100 px apart -> radius max(0.6 * 100, 60) = 60; the given (0,0) is not an empty cell
    lines = [line("1", 0, 0), line("2", 1, 0), line("1", 0, 1), line("1", 1, 1)]
    result = score_sudoku(with_grids, edited=edited, lines=lines, question_lines=question, answer_lines=answer)
    assert result["score"] == pytest.approx(2 / 3) and result["empty_cells"] == 3  # (1,0) wrong
    assert result["umni_score"] == pytest.approx(2 / 3)
    overwritten = lines[1:] + [line("2", 0, 0)]
    result = score_sudoku(with_grids, edited=edited, lines=overwritten, question_lines=question, answer_lines=answer)
    assert result["wrong_given_digits"] == 1 and result["score"] == pytest.approx(2 / 4)
    from_images = {**with_grids, "grid": None, "solution": None}
    result = score_sudoku(from_images, edited=edited, lines=answer, question_lines=question, answer_lines=answer)
    assert result["score"] == 1.0 and result["empty_cells"] == 3 and result["umni_score"] == 1.0
    # (1,1) not read in the answer: 3 answer digits -> fixed 80 px radius, 2 empty cells, both filled;
    # umni's grid cannot be read, so its figure is absent rather than the case failing
    result = score_sudoku(from_images, edited=edited, lines=answer, question_lines=question, answer_lines=answer[:3])
    assert result["score"] == 1.0 and result["empty_cells"] == 2
    assert result["umni_score"] is None and "(1, 1)" in result["umni_note"]


def test_perception_iou_of_the_painted_region(tmp_path):
    original = Image.new("RGB", (128, 128), (200, 180, 160))
    mask = Image.new("L", (128, 128), 0)
    ImageDraw.Draw(mask).rectangle((32, 32, 95, 95), fill=255)  # 64x64
    original.save(tmp_path / "image.png")
    mask.save(tmp_path / "mask.png")
    files = {"image": str(tmp_path / "image.png"), "mask": str(tmp_path / "mask.png")}
    exact = original.copy()
    ImageDraw.Draw(exact).rectangle((32, 32, 95, 95), fill=(0, 255, 0))
    assert score_perception({}, files, edited=exact)["score"] == pytest.approx(1.0, abs=1e-3)
    half = original.copy()
    ImageDraw.Draw(half).rectangle((32, 32, 63, 95), fill=(0, 255, 0))  # the left half only
    result = score_perception({}, files, edited=half)
    assert result["score"] == pytest.approx(0.5, abs=0.01) and result["method"] == "colour"


def test_puzzle_score_is_one_distance_over_the_set():
    # outputs {0, 2} vs solutions {1, 3}: same variance, means 1 apart, so FD = 1
    entries = [
        {"status": "scored", "features": {"output": [0.0], "solution": [1.0]}},
        {"status": "scored", "features": {"output": [2.0], "solution": [3.0]}},
        {"status": "failed", "failure": "backend"},
    ]
    result = puzzle_score(entries)
    assert result["fid"] == pytest.approx(1.0) and result["score"] == pytest.approx(math.exp(-1 / 60))
    assert puzzle_score(entries[:1])["score"] is None


# ------------------------------------------------------------------------------------------------
# End to end, offline


def tailored_cases(root: Path) -> Path:
    """Cases whose right answers sim/umm can draw, so each score has a known value."""
    prompt = root / "prompt"
    prompt.mkdir(parents=True)
    both = "A photo of a duck and a dog."
    (prompt / "NumericalReasoning.json").write_text(json.dumps([
        {"id": 1, "prompt": both, "task": {"objects": ["duck", "dog"], "number": [1, 1]}},
        {"id": 2, "prompt": both, "task": {"objects": ["duck", "dog"], "number": [3, 1]}},
    ]))
    row = "The cat is left of the car."
    (prompt / "SpatialLayout.json").write_text(json.dumps([
        {"id": 1, "prompt": row, "task": {"objects": ["cat", "car"], "relative_position": [{"subject": "cat", "direction": "left", "object": "car"}]}},
        {"id": 2, "prompt": row, "task": {"objects": ["cat", "car"], "relative_position": [{"subject": "cat", "direction": "right", "object": "car"}]}},
    ]))
    sign = 'A wooden sign that reads "OPEN DAILY".'
    (prompt / "TextRendering.json").write_text(json.dumps([
        {"id": 1, "prompt": sign, "text": "Open daily"},
        {"id": 2, "prompt": sign, "text": "closed monday"},
    ]))
    for folder in ("Zoology", "VisualPuzzle", "ReasoningPerception", "VisualLogic"):
        shutil.copytree(BUNDLED / folder, root / folder)
    for name in ("Zoology.json", "ReasoningPerception.json"):
        shutil.copy(BUNDLED / "prompt" / name, prompt / name)
    return root


@pytest.fixture(scope="module")
def full_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("girbench")
    roles = ["ocr=rapidocr/ppocr", "detect=test-scene/boxes", "embed=test-pixels/grid"]
    return run(base, cases=tailored_cases(base / "cases"), roles=roles)


def test_every_task_runs_with_known_scores(full_run):
    scores = full_run.summary.scores
    assert full_run.summary.counts.cases == 15 and full_run.summary.counts.failed == 0
    assert scores["t2i"] == {"numerical": 0.5, "spatial": 0.5, "text": 0.5, "overall": 0.5}
    records = records_of(full_run)
    assert records["numerical/1"]["metrics"]["numerical"]["detail"]["counts"] == {"duck": 1, "dog": 1}
    assert records["text/2"]["metrics"]["text"]["value"] == 0.0
    # the OCR may merge the two words into one line ("opendaily"): the substring rule still credits both
    assert records["text/1"]["metrics"]["text"]["value"] == 1.0
    metrics = scores["metrics"]
    assert {k: metrics[k]["scored"] for k in metrics} == {
        "uni_understanding": 2, "uni_generation": 2, "numerical": 2, "spatial": 2, "text": 2, "puzzle": 3, "sudoku": 2, "perception": 2,
    }
    assert scores["uni"]["generation"]["Botany"] is None and scores["uni"]["understanding"]["Zoology"] is not None
    assert scores["overall_of"] == list(metrics) and scores["edit"]["overall"] is not None


@pytest.mark.filterwarnings("ignore::scipy.linalg.LinAlgWarning")  # 3 cases, 49 dims: singular covariances
def test_set_level_puzzle_score_matches_the_stored_features(full_run):
    records = records_of(full_run)
    pairs = [records[f"puzzle/00{i}"]["metrics"]["puzzle"]["features"] for i in (1, 2, 3)]
    fid = frechet_distance_between(np.array([p["output"] for p in pairs]), np.array([p["solution"] for p in pairs]))
    scores = full_run.summary.scores
    assert scores["puzzle_fid"] == pytest.approx(fid) and scores["edit"]["puzzle"] == pytest.approx(normalized_fid(fid))
    assert len(pairs[0]["solution"]) == 49


def test_uni_records_hold_both_sides(full_run):
    fox = records_of(full_run)["uni/Zoology/1"]
    vqa = fox["metrics"]["uni_understanding"]
    assert vqa["detail"]["options"][vqa["detail"]["answer"]] == "red fox"
    assert vqa["value"] == float(vqa["detail"]["predicted"] == vqa["detail"]["answer"])
    assert -1.0 <= fox["metrics"]["uni_generation"]["value"] <= 1.0
    assert fox["image"] and fox["category"] == "Zoology"
    views = PROTOCOL.views(fox)
    assert [v.title for v in views] == ["Uni · image understanding", "Uni · image generation"]
    titles = [t for t, _, _ in PROTOCOL.tables(full_run.summary.to_json())]
    assert titles[1] == "GIR-Bench-T2I and GIR-Bench-Edit"


def test_backend_failures_are_counted_not_scored(tmp_path):
    result = run(
        tmp_path,
        roles=["edit=sim/umm?error_rate=1"],
        options={"tasks": "perception"},
        retry=RetryPolicy(max_attempts=1),
    )
    metric = result.summary.scores["metrics"]["perception"]
    assert metric["score"] is None and metric["failed"] == 2 and metric["failures"] == {"backend": 2}
    record = records_of(result)["perception/1"]
    assert record["metrics"]["perception"]["node"] == "image"
    assert result.summary.scores["overall"] is None


def test_cli_offline_run_with_ocr_only(tmp_path):
    out = tmp_path / "run"
    code = cli_main([
        "run", "girbench", "--model", "sim/umm", "--role", "ocr=rapidocr/ppocr",
        "--option", "skip_roles=detect,embed", "--option", "tasks=uni,text,perception", "--option", "features=embed",
        "--out", str(out), "--cache", str(tmp_path / "cache"), "--quiet",
    ])
    assert code == 0
    summary = RunFolder(out).read_summary()
    metrics = summary.scores["metrics"]
    assert summary.counts.cases == 11 and summary.counts.skipped_cases == 0
    assert metrics["uni_generation"]["note"] == "not run: embed role not bound (skip_roles)"
    assert metrics["numerical"]["note"] == "not selected (--option tasks)"
    assert summary.scores["overall_of"] == ["uni_understanding", "text", "perception"]
    assert "GIR-Bench-Uni" in (out / "report.html").read_text()


@pytest.mark.filterwarnings("ignore::scipy.linalg.LinAlgWarning")
def test_intervals_never_recompute_the_frechet_distance(full_run, monkeypatch):
    """The puzzle's FID is a set statistic costing seconds to a minute per computation (a 2048-d
    eigen-decomposition): 300 resamples of it made a run's finish take many minutes. Resamples leave
    it out, with every figure that averages it in; the other cells keep their intervals."""
    from umni.reporting.intervals import bootstrap_intervals
    from umni.reporting.runset import Run
    from umni_graphs.girbench import scoring

    computed: list[int] = []
    real = scoring.frechet_distance_between
    monkeypatch.setattr(scoring, "frechet_distance_between", lambda *a, **k: computed.append(1) or real(*a, **k))
    intervals = bootstrap_intervals(Run(full_run.summary, full_run.out, intervals=None))
    assert computed == []
    for key in ("overall", "edit/overall", "edit/puzzle", "puzzle_fid"):
        assert intervals.get(key) is None, key
    # every other cell's interval is what resampling the whole formula gives
    monkeypatch.setattr(PROTOCOL, "summarize_resample", PROTOCOL.summarize)
    whole = bootstrap_intervals(Run(full_run.summary, full_run.out, intervals=None))
    assert computed and whole["overall"] is not None
    fid_bound = {"overall", "puzzle_fid", "edit/puzzle", "edit/overall", "metrics/puzzle/score", "metrics/puzzle/fid"}
    assert {k: v for k, v in intervals.items() if k not in fid_bound} == {k: v for k, v in whole.items() if k not in fid_bound}


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_group_overalls_get_intervals_and_the_puzzle_cells_say_why_not(full_run):
    """Table 2's group Overalls: T2I's resampled within each task (every resample holds all three),
    Edit's averaging in the puzzle's Fréchet distance, which no resample recomputes, says so; a
    paired comparison, whose headline averages it in too, gives no test and says why in one line."""
    from umni.reporting.leaderboard import Run, build_tables
    from umni.reporting.paired import compare_runs

    run = Run(full_run.summary, full_run.out, intervals=None, label="full")
    table = next(t for t in build_tables([run]) if "Table 2" in t.title)
    cells = dict(zip(table.headers(), table.rows[0].cells))
    t2i = cells["GIR-Bench-T2I · Overall"]
    assert t2i.value == 0.5 and t2i.ci is not None and t2i.ci[0] <= 0.5 <= t2i.ci[1]
    edit = cells["GIR-Bench-Edit · Overall"]
    assert edit.ci is None and "Fréchet distance" in edit.no_interval
    assert "no interval (averages in Visual Puzzle, whose score (exp(−FID/60) of one Fréchet distance" in table.markdown(plain=True)
    result = compare_runs(run, run)
    assert result.difference == 0 and result.p_value is None and result.ci is None
    assert "Fréchet distance over the whole set of outputs: no case has a share of it" in result.no_test
    assert result.text().splitlines()[1].startswith("  no interval: A: the Overall averages in Visual Puzzle")
