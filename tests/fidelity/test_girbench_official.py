"""GIR-Bench scores and loaders against the semantics of the official evaluation code.

The official scripts (lihxxx/GIR-Bench, ``eval/*.py``) produced the published numbers, so umni's
default score follows them; where umni deliberately differs, the record carries umni's figure beside
the official one and the summary lists the deviation. Every expected number below is worked out by
hand in the comment next to it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from umni.backends.roles import OcrLine
from umni.cli import main as cli_main
from umni.store.runfolder import RunFolder
from umni_graphs.girbench import PROTOCOL, GirOptions
from umni_graphs.girbench.cases import present_tasks
from umni_graphs.girbench.dataset import SpatialCase, SudokuSpec, load_uni_cases
from umni_graphs.girbench.sudoku import official_digits, official_sudoku_accuracy, official_threshold

SOLUTION = [[1, 2, 3, 4], [3, 4, 1, 2], [2, 1, 4, 3], [4, 3, 2, 1]]
GIVENS = {(0, 0), (0, 3), (1, 1), (1, 2)}


def line(text: str, cx: float, cy: float, half: float = 20, confidence: float = 0.9) -> OcrLine:
    return OcrLine(text, (cx - half, cy - half, cx + half, cy + half), confidence)


def cell_line(text: str, r: int, c: int, *, cell: float = 100, margin: float = 0) -> OcrLine:
    return line(text, margin + cell * (c + 0.5), margin + cell * (r + 0.5))


def answer_lines(*, cell: float = 100, margin: float = 0, drop: tuple[int, int] | None = None) -> list[OcrLine]:
    return [
        cell_line(str(SOLUTION[r][c]), r, c, cell=cell, margin=margin)
        for r in range(4)
        for c in range(4)
        if (r, c) != drop
    ]


def question_lines(*, cell: float = 100, margin: float = 0) -> list[OcrLine]:
    return [cell_line(str(SOLUTION[r][c]), r, c, cell=cell, margin=margin) for r, c in sorted(GIVENS)]


def predicted_lines(*, cell: float = 100, margin: float = 0) -> list[OcrLine]:
    at = lambda text, r, c: cell_line(text, r, c, cell=cell, margin=margin)  # noqa: E731
    return [
        at("1", 0, 0),  # a given, kept: neither credit nor penalty
        at("7", 0, 3),  # a given overwritten ...
        at("9", 0, 3),  # ... twice: officially each wrong digit adds 1 to the denominator
        at("2", 0, 1),  # correct fill
        at("3", 0, 2),  # correct fill
        at("2", 0, 1),  # the same fill read again: that empty cell is already matched
        at("5", 1, 0),  # wrong fill
        # one OCR line spanning cells (2,0) and (2,1): both digits sit at the line centre (100, 250),
        # 50 px from each cell centre, inside the 60 px radius, so both are credited
        OcrLine("21", (margin + 0, margin + 220, margin + 200, margin + 280), 0.9),
    ]


# ---------------------------------------------------------------------------------------------------
# Visual Logic (sudoku)


def test_official_radius_is_six_tenths_of_the_answer_digit_spacing_at_least_60px():
    # centres 100 px apart: max range 300 / (4 - 1) = 100, 0.6 * 100 = 60 -> 60
    assert official_threshold(official_digits(answer_lines()), 4) == 60.0
    # centres 200 px apart: 600 / 3 * 0.6 = 120
    assert official_threshold(official_digits(answer_lines(cell=200)), 4) == pytest.approx(120.0)
    # centres 50 px apart: 150 / 3 * 0.6 = 30, raised to the 60 px minimum
    assert official_threshold(official_digits(answer_lines(cell=50)), 4) == 60.0
    # fewer than four answer digits: the fixed 80 px
    assert official_threshold(official_digits(answer_lines()[:3]), 4) == 80.0


def test_official_digits_sit_at_the_truncated_line_centre():
    # box (0, 0, 101, 51): centre (50.5, 25.5) truncated to (50, 25); every digit of "3a4" sits there
    assert official_digits([OcrLine("3a4", (0, 0, 101, 51), 0.9), OcrLine("8", (0, 0, 9, 9), 0.5)]) == [
        ("3", 50, 25),
        ("4", 50, 25),
    ]


def test_official_sudoku_counts_per_wrong_digit():
    score = official_sudoku_accuracy(predicted_lines(), answer_lines(), question_lines(), 4)
    # 16 answer digits - 4 under a question digit = 12 empty cells; matched (0,1) (0,2) (2,0) (2,1) = 4;
    # wrong digits on givens: "7" and "9" = 2  ->  4 / (12 + 2) = 2/7
    assert (score.matched, score.empty_cells, score.wrong_given_digits) == (4, 12, 2)
    assert score.accuracy == pytest.approx(2 / 7)


def test_a_grid_with_a_margin_scores_the_same_officially():
    kw = {"cell": 100, "margin": 100}
    score = official_sudoku_accuracy(predicted_lines(**kw), answer_lines(**kw), question_lines(**kw), 4)
    assert score.accuracy == pytest.approx(2 / 7)


def test_an_answer_ocr_missing_a_digit_does_not_raise():
    # (3,3) not read: 15 answer digits, 11 empty cells  ->  4 / (11 + 2)
    score = official_sudoku_accuracy(predicted_lines(), answer_lines(drop=(3, 3)), question_lines(), 4)
    assert score.accuracy == pytest.approx(4 / 13)


def _sudoku_truth(size: int = 400, grids: bool = True) -> dict:
    truth = {"grid_size": 4, "grid": None, "solution": None, "question_size": [size, size], "answer_size": [size, size]}
    if grids:
        truth.update(grid=[[SOLUTION[r][c] if (r, c) in GIVENS else 0 for c in range(4)] for r in range(4)], solution=SOLUTION)
    return truth


def _raw(lines: list[OcrLine]) -> list[dict]:
    return [{"text": ln.text, "box": list(ln.box), "confidence": ln.confidence} for ln in lines]


def test_score_sudoku_defaults_to_official_and_reports_umnis_figure_beside():
    from umni_graphs.girbench.scoring import score_sudoku

    out = score_sudoku(
        _sudoku_truth(),
        edited=Image.new("RGB", (400, 400), "white"),
        lines=_raw(predicted_lines()),
        question_lines=_raw(question_lines()),
        answer_lines=_raw(answer_lines()),
    )
    assert out["score"] == pytest.approx(2 / 7)
    # umni: per cell, the overwritten given (0,3) counts once and (1,0) "5" is no credit: 4 / (12 + 1)
    assert out["umni_score"] == pytest.approx(4 / 13)


def test_umni_figure_finds_a_grid_with_a_margin_from_the_answer_digits():
    from umni_graphs.girbench.scoring import score_sudoku

    kw = {"cell": 100, "margin": 100}
    out = score_sudoku(
        _sudoku_truth(600, grids=False),
        edited=Image.new("RGB", (600, 600), "white"),
        lines=_raw(predicted_lines(**kw)),
        question_lines=_raw(question_lines(**kw)),
        answer_lines=_raw(answer_lines(**kw)),
    )
    assert out["score"] == pytest.approx(2 / 7) and out["umni_score"] == pytest.approx(4 / 13)


def test_score_sudoku_with_an_unreadable_answer_keeps_the_official_score():
    from umni_graphs.girbench.scoring import score_sudoku

    out = score_sudoku(
        _sudoku_truth(grids=False),
        edited=Image.new("RGB", (400, 400), "white"),
        lines=_raw(predicted_lines()),
        question_lines=_raw(question_lines()),
        answer_lines=_raw(answer_lines(drop=(3, 3))),
    )
    assert out["score"] == pytest.approx(4 / 13)
    assert out["umni_score"] is None and "(3, 3)" in out["umni_note"]


def test_sudoku_json_with_extra_string_fields_is_accepted():
    spec = SudokuSpec.model_validate({"grid_size": 4, "puzzle": "1..4.41.2.4..3.1", "answer": "1234", "difficulty": "easy"})
    assert spec.grid_size == 4 and spec.grid is None and spec.solution is None


# ---------------------------------------------------------------------------------------------------
# Spatial layout records as the official code accepts them


def test_relation_indices_name_objects_by_position():
    case = SpatialCase.model_validate({
        "id": 1, "prompt": "p",
        "task": {"objects": ["cat", "car"], "colors": ["red", ""], "relative_position": [{"subject": 0, "direction": "left", "object": 1}]},
    })
    # the official code turns an index into the (coloured) detector label
    assert case.relations == [("red cat", "left", "car")]


def _spatial(objects: list, relations: list, colors: list | None = None) -> SpatialCase:
    task = {"objects": objects, "relative_position": relations, **({"colors": colors} if colors is not None else {})}
    return SpatialCase.model_validate({"id": 1, "prompt": "p", "task": task})


def test_objects_of_one_name_load_when_colours_tell_them_apart():
    # Issue 25 item 18. Officially the detector is asked for "red cube" and "blue cube": two labels.
    case = _spatial(["cube", "cube"], [{"subject": 0, "direction": "left", "object": 1}], ["red", "blue"])
    assert case.labels == ["red cube", "blue cube"]
    assert case.relations == [("red cube", "left", "blue cube")]
    # a relation naming "cube" gets the colour of its last occurrence, as the official name -> colour
    # map (built in order, later entries overwriting earlier ones) gives it; an index names its own
    by_name = _spatial(["cube", "cube"], [{"subject": "cube", "direction": "left", "object": 0}], ["red", "blue"])
    assert by_name.relations == [("blue cube", "left", "red cube")]


def test_a_direction_that_is_not_one_of_the_six_words_loads_and_never_holds():
    # Issue 25 item 18. The official check compares the direction with left/right/up/above/down/below
    # exactly; "Left" (or "behind") matches none, so the relation is false, not an error.
    from umni_graphs.girbench.scoring import score_spatial

    for word in ("Left", "behind"):
        case = _spatial(["cat", "car"], [{"subject": "cat", "direction": word, "object": "car"}])
        assert case.relations == [("cat", word, "car")]
        truth = {"labels": case.labels, "relations": [list(r) for r in case.relations]}
        out = score_spatial(truth, detections=[_box("cat", 0), _box("car", 100)])  # the cat IS left of the car
        assert out["score"] == 0.0 and out["umni_score"] == 0.0 and out["relations"] == [False]


def test_cases_check_says_which_spatial_records_can_never_pass(tmp_path):
    records = [
        {"id": 1, "prompt": "p", "task": {"objects": ["cat", "car"], "relative_position": [{"subject": "cat", "direction": "Left", "object": "car"}]}},
        {"id": 2, "prompt": "p", "task": {"objects": ["cube", "cube"], "relative_position": []}},
        {"id": 3, "prompt": "p", "task": {"objects": ["cube", "cube"], "colors": ["red", "blue"], "relative_position": []}},
    ]
    (tmp_path / "prompt").mkdir()
    (tmp_path / "prompt" / "SpatialLayout.json").write_text(json.dumps(records))
    case_set = PROTOCOL.load(tmp_path, GirOptions(tasks="spatial"))
    assert [c.id for c in case_set.cases] == ["spatial/1", "spatial/2", "spatial/3"]  # all loaded, as officially
    notes = {(n.record, n.field): n.message for n in case_set.notes}
    assert set(notes) == {("spatial/1", "relative_position[0].direction"), ("spatial/2", "objects")}
    assert "'Left'" in notes[("spatial/1", "relative_position[0].direction")]
    assert "'cube'" in notes[("spatial/2", "objects")]


def test_empty_relative_position_scores_on_detection_alone():
    from umni_graphs.girbench.scoring import score_spatial

    case = SpatialCase.model_validate({"id": 1, "prompt": "p", "task": {"objects": ["cat"], "relative_position": []}})
    truth = {"labels": case.labels, "relations": [list(r) for r in case.relations]}
    once = score_spatial(truth, detections=[{"label": "cat", "box": [0, 0, 10, 10], "score": 1.0}])
    twice = score_spatial(truth, detections=[{"label": "cat", "box": [0, 0, 10, 10], "score": 1.0}] * 2)
    assert once["score"] == 1.0 and twice["score"] == 0.0


# ---------------------------------------------------------------------------------------------------
# Loaders: the hub layout and relative paths


def _png(path: Path, colour: str = "red") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (32, 32), colour).save(path)


def test_relative_cases_path_keeps_uni_reference_paths_whole(tmp_path, monkeypatch):
    _png(tmp_path / "data" / "Zoology" / "1_red_fox" / "a.png")
    monkeypatch.chdir(tmp_path)
    (case,) = load_uni_cases(Path("data"), ["Zoology"])
    assert all(p.is_file() for p in case.references), case.references


def hub_dataset(root: Path) -> Path:
    """The hub download: ``dataset/reference/`` holding the image sets and ``prompt/``."""
    ref = root / "dataset" / "reference"
    prompt = ref / "prompt"
    prompt.mkdir(parents=True)
    (prompt / "TextRendering.json").write_text(json.dumps([{"id": 1, "prompt": "A sign reading OPEN.", "text": "open"}]))
    (prompt / "Zoology.json").write_text(json.dumps([{"id": 1, "prompt": "The fox of the fable."}]))
    _png(ref / "Zoology" / "1_red_fox" / "a.png")
    _png(ref / "Zoology" / "2_snow_owl" / "a.png", "white")
    return root / "dataset"


def test_hub_download_folder_works_as_cases(tmp_path):
    dataset = hub_dataset(tmp_path)
    assert present_tasks(dataset) == ["uni", "text"]
    case_set = PROTOCOL.load(dataset, GirOptions(skip_roles="detect,ocr"))
    fox = next(c for c in case_set.cases if c.id == "uni/Zoology/1")
    assert fox.prompt == "The fox of the fable."


def test_cases_check_and_run_agree_on_a_relative_hub_folder(tmp_path, monkeypatch, tiny_dinov3):
    hub_dataset(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert cli_main(["cases", "check", "girbench", "dataset"]) == 0
    code = cli_main([
        "run", "girbench", "--cases", "dataset", "--model", "sim/umm", "--option", "tasks=uni",
        "--option", f"uni_model={tiny_dinov3}",
        "--out", "run", "--cache", "cache", "--quiet",
    ])
    summary = RunFolder("run").read_summary()
    assert summary.counts.failed == 0, summary.counts
    assert code == 0


def test_case_schema_names_every_task_file():
    schema = PROTOCOL.case_schema()
    assert {"NumericalReasoning.json", "SpatialLayout.json", "TextRendering.json", "VisualLogic/sudoku/<id>.json"} <= set(schema["properties"])
    assert cli_main(["cases", "schema", "girbench"]) == 0


def test_no_scorable_task_exits_2(tmp_path, capsys):
    dataset = hub_dataset(tmp_path)
    code = cli_main([
        "run", "girbench", "--cases", str(dataset), "--model", "sim/umm", "--option", "tasks=text",
        "--option", "skip_roles=ocr", "--out", str(tmp_path / "run"), "--cache", str(tmp_path / "cache"), "--quiet",
    ])
    assert code == 2
    assert "no GIR-Bench case can be scored" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------------
# Visual Puzzle: torchmetrics' InceptionV3 FID, as the official code calls it


#: torch-fidelity comes with the `girbench` and `all` extras; where it is absent the tests that need its
#: InceptionV3 say so and skip.
NEEDS_TORCH_FIDELITY = "pip install 'umni[girbench]'"


def require_torch_fidelity() -> None:
    # find_spec, not importorskip: importing the package itself runs its __init__, which needs torchvision
    import importlib.util
    import sys

    if "torch_fidelity" not in sys.modules and importlib.util.find_spec("torch_fidelity") is None:
        pytest.skip(NEEDS_TORCH_FIDELITY)


@pytest.fixture(scope="module")
def inception_weights(tmp_path_factory) -> str:
    require_torch_fidelity()
    from umni_graphs.girbench.fid import write_random_weights

    return str(write_random_weights(tmp_path_factory.mktemp("fid") / "inception_random.pth"))


def test_torchmetrics_fid_of_hand_made_features():
    import numpy as np

    from umni_graphs.girbench.fid import fid_from_features

    # outputs (0,0),(2,0): mean (1,0), covariance diag(2,0); solutions (1,1),(3,1): mean (2,1), same
    # covariance. |dmu|^2 = 2; Tr(S1) + Tr(S2) = 4; Tr((S1 S2)^1/2) = Tr(diag(2,0)) = 2 -> 2 + 4 - 4 = 2
    fid = fid_from_features(np.array([[0.0, 0.0], [2.0, 0.0]]), np.array([[1.0, 1.0], [3.0, 1.0]]))
    assert fid == pytest.approx(2.0, abs=1e-5)


def _drawn(size: tuple[int, int], seed: int) -> Image.Image:
    import numpy as np

    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8))


def test_puzzle_fid_equals_the_official_torchmetrics_call(tmp_path, inception_weights):
    import torch

    from umni_graphs.girbench.fid import _import_fid
    from umni_graphs.girbench.scoring import puzzle_features, puzzle_score

    pairs = []
    for i in range(3):
        solution = tmp_path / f"{i}.png"
        _drawn((300, 200), i).save(solution)
        pairs.append((_drawn((640, 480), 10 + i), solution))
    # the official loop: RGB, PIL resize to 512x512, uint8 tensor into FrechetInceptionDistance(feature=2048)
    metric = _import_fid().FrechetInceptionDistance(feature=2048, feature_extractor_weights_path=inception_weights)

    def official(image: Image.Image):
        arr = torch.from_numpy(__import__("numpy").array(image.convert("RGB").resize((512, 512))))
        return arr.permute(2, 0, 1).unsqueeze(0).to(torch.uint8)

    for output, solution in pairs:
        metric.update(official(Image.open(solution)), real=True)
        metric.update(official(output), real=False)
    expected = float(metric.compute())
    entries = [
        {"status": "scored", "features": puzzle_features({"fid_weights": inception_weights}, {"solution": str(s)}, output=o)}
        for o, s in pairs
    ]
    assert len(entries[0]["features"]["output"]) == 2048
    result = puzzle_score(entries)
    assert expected > 1.0  # random weights still separate the images
    assert result["fid"] == pytest.approx(expected, rel=1e-4)
    assert result["score"] == pytest.approx(__import__("math").exp(-expected / 60), rel=1e-4)


def test_default_graphs_use_the_official_extractors_not_the_embed_role():
    from umni_cases import bundled
    from umni_graphs.girbench.cases import load_tasks

    case_set = load_tasks(bundled("girbench"), GirOptions(tasks="uni,puzzle"))
    puzzle = next(c for c in case_set.cases if c.task == "puzzle")
    graph = PROTOCOL.build(puzzle, GirOptions())
    assert graph.required_roles() == {"edit"} and "features" in graph.nodes
    uni = next(c for c in case_set.cases if c.id == "uni/Zoology/1")
    assert PROTOCOL.build(uni, GirOptions()).required_roles() == {"generate", "understand"}


# ---------------------------------------------------------------------------------------------------
# Uni: DINOv3 class token, plain 224 resize, ImageNet normalisation


def test_dinov3_input_is_a_plain_resize_with_imagenet_normalisation():
    from umni_graphs.girbench.dinov3 import official_pixels

    pixels = official_pixels(Image.new("RGB", (50, 30), (255, 0, 128)))
    assert pixels.shape == (3, 224, 224)
    # (1 - 0.485) / 0.229, (0 - 0.456) / 0.224, (128/255 - 0.406) / 0.225
    assert pixels[:, 100, 7] == pytest.approx([2.2489083, -2.0357143, 0.4264924], abs=1e-5)


@pytest.fixture(scope="module")
def tiny_dinov3(tmp_path_factory) -> str:
    import torch
    from transformers import DINOv3ViTConfig, DINOv3ViTModel

    torch.manual_seed(0)
    config = DINOv3ViTConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, num_register_tokens=2)
    folder = tmp_path_factory.mktemp("dinov3") / "tiny"
    DINOv3ViTModel(config).save_pretrained(folder)
    return str(folder)


def test_uni_similarity_is_the_mean_cosine_of_dinov3_class_tokens(tmp_path, tiny_dinov3):
    import numpy as np

    from umni_graphs.girbench.dinov3 import dinov3_features
    from umni_graphs.girbench.scoring import score_dinov3_similarity

    same, other = tmp_path / "same.png", tmp_path / "other.png"
    generated = _drawn((96, 64), 1)
    generated.save(same)
    _drawn((64, 64), 2).save(other)
    out = score_dinov3_similarity({"model": tiny_dinov3}, {"ref_000": str(same), "ref_001": str(other)}, generated=generated)
    g, o = dinov3_features([generated, Image.open(other)], model=tiny_dinov3)
    cosine = float(g @ o / (np.linalg.norm(g) * np.linalg.norm(o)))
    # the identical reference scores 1, the other its cosine: the mean of the two
    assert out["score"] == pytest.approx((1.0 + cosine) / 2, abs=1e-6) and out["references"] == 2


# ---------------------------------------------------------------------------------------------------
# Reasoning perception: OpenCV resizing and the official region growing


def test_resizing_rounds_exactly_as_opencv():
    import cv2
    import numpy as np

    from umni_graphs.girbench import masks

    img = np.random.default_rng(1).integers(0, 256, (37, 53, 3), dtype=np.uint8)
    for size in ((48, 64), (512, 512), (20, 30)):
        expected = cv2.resize(img, (size[1], size[0]), interpolation=cv2.INTER_LINEAR)
        assert (masks.resize_linear(img, size) == expected).all()


def test_ratio_fallback_grows_the_seeds_into_similar_colour():
    import numpy as np

    from umni_graphs.girbench.masks import reasoning_perception_iou

    # Original: grey, with a 140x140 patch of (60, 140, 60) at [186, 326). The edit paints the central
    # 100x100 square [206, 306) (60, 140, 60) too: only there did green rise (delta G = 40 > 10), so
    # those are the seeds (G/R = G/B = 2.33 > 1.15, saturation 146 >= 60, 10000 px >= 200; the colour
    # step finds nothing since G < 155). Growing adds one ring of identical colour (Lab distance 0)
    # per step for 5 steps, stopped by no edge (the patch border is 15 px further): 110x110 = 12100 px,
    # less the 4 corner pixels: the opening with OpenCV's 3x3 ellipse (a cross) cuts each seed corner,
    # and growing in 3x3 steps keeps each corner one pixel short. Without growing: 100x100 - 4.
    original = np.full((512, 512, 3), 100, dtype=np.uint8)
    original[186:326, 186:326] = (60, 140, 60)
    original[206:306, 206:306] = (100, 100, 100)
    edited = original.copy()
    edited[206:306, 206:306] = (60, 140, 60)
    target = np.zeros((512, 512), dtype=np.uint8)
    target[201:311, 201:311] = 255
    score = reasoning_perception_iou(Image.fromarray(edited), Image.fromarray(target), Image.fromarray(original))
    assert score.method == "ratio" and score.predicted_px == 110 * 110 - 4
    assert score.iou == pytest.approx((110 * 110 - 4) / (110 * 110))


# ---------------------------------------------------------------------------------------------------
# A hub-layout folder runs end to end with the official scorers


def hub_folder_with_every_task(root: Path) -> Path:
    """``dataset/reference/`` as downloaded: the bundled (umni-drawn) image sets and prompt files,
    with record shapes the official code accepts and umni refused before."""
    import shutil

    from umni_cases import bundled

    source = bundled("girbench")
    ref = root / "dataset" / "reference"
    for folder in ("Zoology", "Botany", "Geography", "ReasoningPerception", "VisualLogic", "VisualPuzzle", "prompt"):
        shutil.copytree(source / folder, ref / folder)
    spatial = json.loads((ref / "prompt" / "SpatialLayout.json").read_text())
    spatial.append({"id": 9, "prompt": "A cat and a car.", "task": {"objects": ["cat", "car"], "relative_position": [{"subject": 0, "direction": "left", "object": 1}]}})
    spatial.append({"id": 10, "prompt": "A cat.", "task": {"objects": ["cat"], "relative_position": []}})
    (ref / "prompt" / "SpatialLayout.json").write_text(json.dumps(spatial))
    sudoku = ref / "VisualLogic" / "sudoku" / "2.json"
    sudoku.write_text(json.dumps({**json.loads(sudoku.read_text()), "puzzle": "1..4", "difficulty": "easy"}))
    return root / "dataset"


def test_hub_layout_folder_runs_through_umni_run_with_the_official_scorers(tmp_path, tiny_dinov3, inception_weights):
    dataset = hub_folder_with_every_task(tmp_path)
    before = sorted(str(p.relative_to(dataset)) for p in dataset.rglob("*"))
    out = tmp_path / "run"
    code = cli_main([
        "run", "girbench", "--cases", str(dataset), "--model", "sim/umm", "--role", "ocr=rapidocr/ppocr",
        "--option", f"uni_model={tiny_dinov3}", "--option", f"fid_weights={inception_weights}",
        "--out", str(out), "--cache", str(tmp_path / "cache"), "--quiet",
    ])
    summary = RunFolder(out).read_summary()
    assert code == 0 and summary.counts.failed == 0, summary.counts
    assert sorted(str(p.relative_to(dataset)) for p in dataset.rglob("*")) == before  # folder unchanged
    metrics = summary.scores["metrics"]
    # no detector bound: numerical and spatial are skipped and counted, every other task is scored
    skipped = [s.case_id for s in summary.skipped_cases]
    assert summary.counts.skipped_cases == 8 and sorted(skipped)[:3] == ["numerical/1", "numerical/2", "numerical/3"]
    assert "spatial/9" in skipped and "spatial/10" in skipped
    assert {k: metrics[k]["scored"] for k in ("uni_generation", "text", "puzzle", "sudoku", "perception")} == {
        "uni_generation": 6, "text": 3, "puzzle": 3, "sudoku": 2, "perception": 2,
    }
    assert summary.scores["puzzle_fid"] is not None and summary.scores["features"] == "official"
    deviations = {d["id"]: d for d in summary.scores["deviations"]}
    assert deviations["sudoku-per-cell"]["official_score"] == metrics["sudoku"]["score"]
    assert "umni_score" in deviations["sudoku-per-cell"] and "failures-counted" in deviations
    assert "spatial-label-matching" not in deviations  # listed only for metrics that ran


# ---------------------------------------------------------------------------------------------------
# Spatial layout: the official prefix rule for label names


def test_spatial_label_that_prefixes_another_counts_its_boxes_officially():
    from umni_graphs.girbench.scoring import score_spatial

    truth = {"labels": ["cat", "car", "car seat"], "relations": [["cat", "left", "car"]]}
    detections = [
        {"label": "cat", "box": [0, 0, 10, 10], "score": 1.0},
        {"label": "car", "box": [100, 0, 110, 10], "score": 1.0},
        {"label": "car seat", "box": [200, 0, 210, 10], "score": 1.0},
    ]
    out = score_spatial(truth, detections=detections)
    # officially the boxes are keyed cat_1, car_1, car_seat_1, and "car" counts every key that starts
    # with "car_" and ends in a number: 2 boxes, not exactly one, so the case fails (0); umni compares
    # whole labels: each object once and the cat (centre x 5) left of the car (centre x 105) -> 1
    assert out["score"] == 0.0 and out["umni_score"] == 1.0
    assert out["official_counts"] == {"cat": 1, "car": 2, "car seat": 1}


def _box(label: str, x: float) -> dict:
    return {"label": label, "box": [x, 0, x + 10, 10], "score": 1.0}


def test_spatial_any_label_with_two_boxes_fails_the_case_officially_even_one_not_asked_for():
    # Issue 25 item 17. Officially (utils.process_detection_result) every box key's base name with two
    # or more boxes is "excess", asked for or not, and eval_SpatialLayout.check_spatial_relation fails
    # the case on any excess. Boxes keyed cat_1, car_1, dog_1, dog_2: "dog" has 2 -> excess -> 0.
    # umni's figure counts the asked labels only: each once, the cat (x 5) left of the car (x 105) -> 1.
    from umni_graphs.girbench.scoring import score_spatial

    truth = {"labels": ["cat", "car"], "relations": [["cat", "left", "car"]]}
    two_dogs = [_box("cat", 0), _box("car", 100), _box("dog", 200), _box("dog", 300)]
    out = score_spatial(truth, detections=two_dogs)
    assert out["score"] == 0.0 and out["umni_score"] == 1.0
    assert out["official_excess"] == ["dog"] and out["official_missing"] == []
    # one box of a label nobody asked for is no excess: both figures 1
    one_dog = score_spatial(truth, detections=two_dogs[:3])
    assert (one_dog["score"], one_dog["umni_score"], one_dog["official_excess"]) == (1.0, 1.0, [])


def test_spatial_excess_counts_boxes_after_the_official_renaming():
    # "car" boxes are renamed to the asked "red car" (its name without the first word); two of them:
    # keys "red car_1", "red car_2" -> base "red car" has 2 -> excess, and the label's count is 2 -> 0.
    from umni_graphs.girbench.scoring import score_spatial

    truth = {"labels": ["red car", "cat"], "relations": [["cat", "left", "red car"]]}
    out = score_spatial(truth, detections=[_box("cat", 0), _box("red car", 100), _box("car", 200)])
    assert out["score"] == 0.0 and out["official_excess"] == ["red car"]
    assert out["umni_score"] == 1.0  # umni: one detection carries the label "red car"


def test_spatial_label_found_only_under_another_name_is_missing_officially():
    # The detector stated no "red car" (the reply lists it missing); its "car" box is renamed to
    # "red car_1", but the reply's missing list is applied last, so "red car" stays missing -> 0,
    # even with no relation to check (detection alone decides the case).
    from umni_graphs.girbench.scoring import score_spatial

    out = score_spatial({"labels": ["red car"], "relations": []}, detections=[_box("car", 0)])
    assert out["score"] == 0.0 and out["official_missing"] == ["red car"] and out["umni_score"] == 0.0


def test_numerical_label_found_only_under_another_name_is_missing_officially():
    # Same rule in the counting task: "hot dog" was stated 0 times (listed missing); the "dog" box
    # renamed to "hot dog_1" does not bring it back: count 0, missing -> 0 although 1 was expected.
    from umni_graphs.girbench.scoring import score_numerical

    out = score_numerical({"objects": ["hot dog"], "number": [1]}, detections=[_box("dog", 0)])
    assert out["official_counts"] == {"hot dog": 0} and out["score"] == 0.0 and out["umni_score"] == 0.0


def test_missing_extractor_weights_fail_the_cases_with_a_clear_message(tmp_path):
    require_torch_fidelity()
    from umni_graphs.girbench.scoring import puzzle_features

    solution = tmp_path / "s.png"
    _drawn((32, 32), 0).save(solution)
    for _ in range(2):  # the failed load is remembered, not retried per case
        with pytest.raises(RuntimeError, match="fid_weights=<local .pth file>"):
            puzzle_features({"fid_weights": str(tmp_path / "absent.pth")}, {"solution": str(solution)}, output=_drawn((32, 32), 1))


def test_numerical_box_of_a_name_ending_another_is_credited_to_the_longer_name_officially():
    from umni_graphs.girbench.scoring import score_numerical

    truth = {"objects": ["dog", "hot dog"], "number": [1, 1]}
    detections = [
        {"label": "dog", "box": [0, 0, 10, 10], "score": 1.0},
        {"label": "hot dog", "box": [50, 0, 60, 10], "score": 1.0},
    ]
    out = score_numerical(truth, detections=detections)
    # officially the boxes are keyed dog_1 and hot_dog_1; a key whose name is the last words of a
    # longer object ("dog" of "hot dog") is renamed to that object, so "hot dog" has 2 boxes and its
    # count becomes max(stated 1, boxes 2) = 2 != 1 -> 0. umni counts whole labels: 1 and 1 -> 1
    assert out["official_counts"] == {"dog": 1, "hot dog": 2}
    assert out["score"] == 0.0 and out["umni_score"] == 1.0
