"""GENIUS: loading records and images, the three input formats, judge prompts and parser, scoring by hand."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from PIL import Image

from umni.util.errors import InputError, InputErrors, InvalidAnswer, ParseFailure
from umni_cases import bundled
from umni_graphs.genius.dataset import DIMENSIONS, image_file_name, load_dataset, load_dimension
from umni_graphs.genius.prompts import (
    ANSWER_HEADING,
    InputFormat,
    aesthetic_quality_prompt,
    context_parts,
    copy_check_prompt,
    generation_input,
    hint_text,
    parse_judge_answer,
    rule_compliance_prompt,
    visual_consistency_prompt,
)
from umni_graphs.genius.scoring import (
    GeniusItem,
    HintJudgement,
    JudgeFailure,
    metric_mark,
    overall,
    score_item,
    summarize,
)

SAMPLE = bundled("genius") / "dataset"
PARSE = JudgeFailure(kind="parse", detail="no label")


def _write_dimension(root: Path, dimension: str, records: list, images: tuple[str, ...] = ()) -> Path:
    folder = root / dimension
    (folder / "images").mkdir(parents=True, exist_ok=True)
    (folder / "test_data.json").write_text(json.dumps(records), encoding="utf-8")
    for name in images:
        Image.new("RGB", (8, 8), "red").save(folder / "images" / name)
    return folder / "test_data.json"


# --------------------------------------------------------------------------------------- loading


def test_bundled_sample_loads_two_records_per_dimension_with_every_image():
    dataset = load_dataset(SAMPLE)
    assert dataset.missing_images == []
    groups = dataset.by_dimension()
    assert sorted(groups) == sorted(DIMENSIONS)
    assert all(len(cases) == 2 for cases in groups.values())
    assert all(not case.vc_hints for case in groups["multi_semantic"])
    assert all(case.vc_hints for name in DIMENSIONS if name != "multi_semantic" for case in groups[name])
    for case in dataset.cases:
        for ref in case.images.values():
            assert ref.path.is_file() and ref.path.is_relative_to(SAMPLE.resolve())
            with Image.open(ref.path) as image:
                assert image.size == (128, 128)


def test_record_details_survive_loading():
    cases = {case.key: case for case in load_dataset(SAMPLE).cases}
    lamp = cases["implicit_pattern/2"]
    assert lamp.id == 2 and lamp.output_name == "2.png"
    assert [ref.name for ref in lamp.context_images] == ["ip_round_red", "ip_round_blue", "ip_square_blue"]
    garden = cases["visual_constraint/vc01"]  # spelled VC_hint, with two hints
    assert [hint.reference.name for hint in garden.vc_hints] == ["vc_fountain", "vc_plan"]
    card = cases["symbolic_constraint/sc02"]  # one tag already has its .png
    assert card.images["sc_dot_green.png"].path.name == "sc_dot_green.png"
    assert card.images["sc_card_check"].path.name == "sc_card_check.png"
    assert image_file_name("photo.JPG") == "photo.JPG" and image_file_name("a.b") == "a.b.png"


def test_missing_images_are_listed_as_record_and_path(tmp_path):
    records = [
        {"id": 1, "context": "Look <image:here>. And <image:gone>.", "instruction": "Draw.", "rc_hint": "x", "vc_hint": "<image:gone2> keep"},
        {"id": "b", "context": "Only <image:here>.", "instruction": "Draw.", "rc_hint": "x"},
    ]
    _write_dimension(tmp_path, "prior_conflicting", records, images=("here.png",))
    dataset = load_dataset(tmp_path)
    images = tmp_path.resolve() / "prior_conflicting" / "images"
    assert dataset.missing_images == [
        ("prior_conflicting/1", images / "gone.png"),
        ("prior_conflicting/1", images / "gone2.png"),
    ]


def test_image_paths_cannot_leave_the_dataset(tmp_path):
    root = tmp_path / "dataset"
    records = [
        {"id": 1, "context": "See <image:../../../../etc/passwd>", "instruction": "Draw.", "rc_hint": "x"},
        {"id": 2, "context": "See <image:/etc/hosts>", "instruction": "Draw.", "rc_hint": "x"},
        {"id": 3, "context": "ok", "instruction": "Draw.", "rc_hint": "x", "vc_hint": ["<image:../../../secret> keep it"]},
        {"id": 4, "context": "Shared <image:../../multi_semantic/images/desk>", "instruction": "Draw.", "rc_hint": "x"},
    ]
    path = _write_dimension(root, "implicit_pattern", records)
    with pytest.raises(InputErrors) as info:
        load_dimension(root, "implicit_pattern")
    found = {(e.record, e.field) for e in info.value.errors}
    assert found == {("#0 (id 1)", "context"), ("#1 (id 2)", "context"), ("#2 (id 3)", "vc_hint.0")}
    assert all(e.path == str(path) for e in info.value.errors)
    assert "outside the dataset folder" in str(info.value)


def test_malformed_records_are_all_reported_with_file_record_and_field(tmp_path):
    good = {"id": "a", "context": "c <image:x>", "instruction": "i", "rc_hint": "r"}
    records = [
        good,
        {**good, "id": "b", "instruction": ""},
        {**good, "id": "e/f"},
        {**good, "id": "a"},
        {k: v for k, v in good.items() if k != "rc_hint"} | {"id": 7},
        {**good, "id": True},
        "not a record",
    ]
    path = _write_dimension(tmp_path, "symbolic_constraint", records, images=("x.png",))
    with pytest.raises(InputErrors) as info:
        load_dataset(tmp_path)
    found = {(e.record, e.field) for e in info.value.errors}
    assert ("#1 (id b)", "instruction") in found
    assert ("#2 (id e/f)", "id") in found
    assert ("#3 (id a)", "id") in found  # duplicate
    assert ("#4 (id 7)", "rc_hint") in found
    assert any(record == "#5" and field and field.startswith("id") for record, field in found)
    assert ("#6", None) in found
    assert all(e.path == str(path) for e in info.value.errors)


def test_dataset_level_problems(tmp_path):
    with pytest.raises(InputError, match="not found"):
        load_dataset(tmp_path / "nowhere")
    with pytest.raises(InputError, match="no <dimension>/test_data.json"):
        load_dataset(tmp_path)
    with pytest.raises(InputError, match="unknown GENIUS dimension"):
        load_dimension(tmp_path, "painting")
    with pytest.raises(InputError, match="file not found"):
        load_dataset(tmp_path, ["multi_semantic"])


# --------------------------------------------------------------------------------------- input formats

IMAGES = {"a": Path("/d/a.png"), "b": Path("/d/b.png"), "c": Path("/d/c.png")}
A, B, C = IMAGES["a"], IMAGES["b"], IMAGES["c"]
CONTEXT = "Here is my dog <image:a> on the beach. Then <image:b>. She chased <image:c> and <image:a> all day"


def test_fine_grained_puts_images_exactly_at_their_tags():
    assert context_parts(CONTEXT, "Draw her asleep.", IMAGES, "fine_grained") == [
        "Here is my dog", A, "on the beach. Then", B, ". She chased", C, "and", A, "all day", "Draw her asleep."
    ]


def test_interleaved_moves_images_to_sentence_ends():
    assert context_parts(CONTEXT, "Draw her asleep.", IMAGES, InputFormat.INTERLEAVED) == [
        "Here is my dog on the beach.", A, "Then.", B, "She chased and all day", C, A, "Draw her asleep."
    ]
    # A tag that already follows a sentence end or a colon stays where it is.
    assert context_parts("Rule: <image:a> Apply it. <image:b> Done.", "Go.", IMAGES, "interleaved") == [
        "Rule:", A, "Apply it.", B, "Done.", "Go."
    ]
    assert context_parts("<image:a>\nLine one <image:b>\nLine two", "Go.", IMAGES, "interleaved") == [
        A, "Line one", B, "Line two", "Go."
    ]


def test_edit_mode_gives_images_first_and_numbers_them_in_the_text():
    assert context_parts(CONTEXT, "Draw her asleep.", IMAGES, "edit") == [
        A,
        B,
        C,
        "Here is my dog [Image 1] on the beach. Then [Image 2]. She chased [Image 3] and [Image 1] all day",
        "Draw her asleep.",
    ]


def test_generation_input_uses_resolved_paths_for_every_format():
    case = next(c for c in load_dataset(SAMPLE).cases if c.key == "symbolic_constraint/sc01")
    legend, basket = case.images["sc_legend"].path, case.images["sc_basket"].path
    for fmt in InputFormat:
        parts = generation_input(case, fmt)
        assert [p for p in parts if isinstance(p, Path)] == [legend, basket]
        assert parts[-1] == case.instruction
        assert not any("<image:" in p for p in parts if isinstance(p, str))
    assert generation_input(case)[:2] == [
        "In this notation a triangle means 'add one red ball' and a square means 'take one ball out'.",
        legend,
    ]


# --------------------------------------------------------------------------------------- judge prompts


@pytest.mark.parametrize(
    ("prompt", "line"),
    [
        (rule_compliance_prompt("Three red balls in <image:sc_basket>."), "Rule Compliance: <0-2>"),
        (visual_consistency_prompt("<image:vc_cat> The same orange cat."), "Visual Consistency: <0-2>"),
        (aesthetic_quality_prompt(), "Aesthetic Quality: <0-2>"),
        (copy_check_prompt(), "Copy: <0-1>"),
    ],
)
def test_judge_prompts_end_with_one_template_line(prompt, line):
    assert prompt.split(ANSWER_HEADING)[-1].strip().splitlines() == [line]
    assert re.fullmatch(r"[A-Za-z ]+: <\d-\d>", line)
    assert "<image:" not in prompt


def test_hints_are_shown_without_tags():
    assert hint_text("<image:vc_cat> The same orange cat.") == "the reference image The same orange cat."
    assert "Three red balls in the reference image." in rule_compliance_prompt("Three red balls in <image:sc_basket>.")


# --------------------------------------------------------------------------------------- parser


@pytest.mark.parametrize(
    ("text", "metric", "expected"),
    [
        ("Rule Compliance: 2", "rc", 2),
        ("rule compliance：1", "rc", 1),
        ("The subject is kept.\nVISUAL CONSISTENCY: 0", "vc", 0),
        ("Aesthetic  Quality : 1", "aq", 1),
        ("RuleCompliance: 2", "rc", 2),  # the official pattern allows no space between the words
        ("Copy: 1", "copy", 1),
        ("copy：0", "copy", 0),
        ("Rule Compliance: 1\nRevised. Rule Compliance: 2", "rc", 1),  # the first match counts (official)
        ("Rule Compliance: 2.0", "rc", 2),
    ],
)
def test_parser_reads_the_metric_line(text, metric, expected):
    assert parse_judge_answer(text, metric) == expected


@pytest.mark.parametrize(
    ("text", "metric", "error"),
    [
        ("", "rc", ParseFailure),
        ("Looks fine to me, 2", "rc", ParseFailure),
        ("Rule Compliance 2", "rc", ParseFailure),  # no colon
        ("Visual Consistency: 2", "rc", ParseFailure),  # another metric's label
        ("Rule Compliance: <0-2>", "rc", ParseFailure),
        ("Rule Compliance: 3", "rc", InvalidAnswer),
        ("Copy: 2", "copy", InvalidAnswer),
        ("Aesthetic Quality: 1.5", "aq", InvalidAnswer),
        ("**Aesthetic Quality:** 2", "aq", ParseFailure),  # officially no match either (reads 0)
    ],
)
def test_parser_never_invents_a_score(text, metric, error):
    with pytest.raises(error) as info:
        parse_judge_answer(text, metric)
    assert info.value.raw == text


def test_parser_rejects_unknown_metric():
    with pytest.raises(ValueError):
        parse_judge_answer("Score: 1", "score")


# --------------------------------------------------------------------------------------- scoring


def test_metric_mark_rounds_the_mean_of_rounds():
    assert metric_mark([2, 2, 1]) == 2  # 1.67
    assert metric_mark([2, 1, 1]) == 1  # 1.33
    assert metric_mark([1, 0, 0]) == 0  # 0.33
    assert metric_mark([0, 1, 1]) == 1  # 0.67
    assert metric_mark([2, 0, 1]) == 1
    assert metric_mark([2, PARSE, 2]) == PARSE  # by default every round must be usable
    # With a lost round allowed, a tie rounds half to even like Python's round().
    assert metric_mark([0, 1, PARSE], min_valid_rounds=2) == 0  # 0.5 -> 0
    assert metric_mark([1, 2, PARSE], min_valid_rounds=2) == 2  # 1.5 -> 2
    assert metric_mark([1, PARSE, PARSE], min_valid_rounds=2) == PARSE
    with pytest.raises(ValueError):
        metric_mark([2], min_valid_rounds=3)
    with pytest.raises(ValueError):
        metric_mark([])


def test_item_scores_by_hand():
    item = GeniusItem(
        dimension="visual_constraint",
        id="c",
        vc_hints=2,
        rc=[1, 0, 0],
        aq=[2, 2, 2],
        vc=[HintJudgement(copied=True), HintJudgement(rounds=[2, 2, 1])],
    )
    score = score_item(item)
    assert (score.rc, score.vc, score.aq, score.output_missing) == (0.0, 0.0, 100.0, False)  # a copy for any hint: VC 0
    assert score_item({"dimension": "multi_semantic", "id": 1, "vc_hints": 0, "rc": [1, 1, 2], "aq": [2, 1, 2]}).vc is None
    missing = score_item(GeniusItem(dimension="implicit_pattern", id="b", vc_hints=1, output_missing=True))
    assert (missing.rc, missing.vc, missing.aq, missing.output_missing) == (0.0, 0.0, 0.0, True)
    undecided = score_item(
        GeniusItem(dimension="prior_conflicting", id="f", vc_hints=1, rc=[2], aq=[1], vc=[HintJudgement(copied=PARSE, rounds=[2])])
    )
    assert undecided.vc == PARSE and undecided.rc == 100.0


def test_items_must_be_complete():
    with pytest.raises(ValueError, match="one per hint"):
        GeniusItem(dimension="visual_constraint", id=1, vc_hints=2, rc=[1], aq=[1], vc=[HintJudgement(rounds=[1])])
    with pytest.raises(ValueError, match="no judge rounds"):
        GeniusItem(dimension="visual_constraint", id=1, vc_hints=0, output_missing=True, rc=[1])
    with pytest.raises(ValueError, match="unknown dimension"):
        GeniusItem(dimension="painting", id=1, vc_hints=0, rc=[1], aq=[1])
    with pytest.raises(ValueError, match="needs its vc rounds"):
        GeniusItem(dimension="visual_constraint", id=1, vc_hints=1, rc=[1], aq=[1], vc=[HintJudgement()])


def _hand_items() -> list[GeniusItem]:
    return [
        # rc 1.67->2 (100), aq 1 (50), vc 1.33->1 (50)
        GeniusItem(dimension="implicit_pattern", id="a", vc_hints=1, rc=[2, 2, 1], aq=[1, 1, 1], vc=[HintJudgement(rounds=[2, 1, 1])]),
        # no output image: 0 everywhere it applies, counted as missing
        GeniusItem(dimension="implicit_pattern", id="b", vc_hints=1, output_missing=True),
        # rc 0, aq 100, a copy for hint 1 -> the item's VC is 0
        GeniusItem(
            dimension="visual_constraint",
            id="c",
            vc_hints=2,
            rc=[1, 0, 0],
            aq=[2, 2, 2],
            vc=[HintJudgement(copied=True), HintJudgement(rounds=[2, 2, 1])],
        ),
        # multi_semantic: rc 1.33->1 (50), aq 1.67->2 (100), no VC
        GeniusItem(dimension="multi_semantic", id="d", vc_hints=0, rc=[1, 1, 2], aq=[2, 1, 2]),
        # rc lost to a parse failure; aq 0.33->0 (0)
        GeniusItem(dimension="multi_semantic", id="e", vc_hints=0, rc=[2, PARSE, 2], aq=[0, 0, 1]),
        # rc 100, aq 1.33->1 (50), copy check unreadable -> VC failure
        GeniusItem(dimension="prior_conflicting", id="f", vc_hints=1, rc=[2, 2, 2], aq=[1, 2, 1], vc=[HintJudgement(copied=PARSE)]),
    ]


def test_summary_by_hand():
    keys = [item.key for item in _hand_items()]
    summary = summarize(_hand_items(), expected=[*keys, "symbolic_constraint/zz"])
    # RC over a, b, c, d, f (e failed): (100 + 0 + 0 + 50 + 100) / 5
    assert summary.rc.mean == pytest.approx(50.0) and summary.rc.scored == 5 and summary.rc.failures == {"parse": 1}
    # VC over a, b, c (d, e have no hints; f failed): (50 + 0 + 0) / 3
    assert summary.vc.mean == pytest.approx(50 / 3) and summary.vc.scored == 3 and summary.vc.failures == {"parse": 1}
    # AQ over all six: (50 + 0 + 100 + 100 + 0 + 50) / 6
    assert summary.aq.mean == pytest.approx(50.0) and summary.aq.scored == 6
    # 0.6*50 + 0.35*16.67 + 0.05*50
    assert summary.overall == pytest.approx(30 + 35 / 6 + 2.5)
    assert summary.missing_outputs == 1
    assert summary.missing_items == ["symbolic_constraint/zz"]

    implicit = summary.dimensions["implicit_pattern"]
    assert (implicit.items, implicit.missing_outputs) == (2, 1)
    assert (implicit.rc.mean, implicit.vc.mean, implicit.aq.mean) == (50.0, 25.0, 25.0)
    multi = summary.dimensions["multi_semantic"]
    assert multi.vc is None
    assert (multi.rc.mean, multi.rc.scored, multi.rc.failures) == (50.0, 1, {"parse": 1})
    assert multi.aq.mean == 50.0
    assert "symbolic_constraint" not in summary.dimensions


def test_pooled_means_are_data_weighted_across_dimensions():
    items = [GeniusItem(dimension="implicit_pattern", id=i, vc_hints=0, rc=[2], aq=[2]) for i in range(3)]
    items.append(GeniusItem(dimension="multi_semantic", id=0, vc_hints=0, rc=[0], aq=[0]))
    summary = summarize(items)
    # Three items at 100 and one at 0: data-weighted 75, not the 50 of averaging the two dimensions.
    assert summary.rc.mean == pytest.approx(75.0)
    # no item had a vc_hint: VC enters the Overall as 0, as cal_score.py does
    assert summary.vc.mean is None and summary.vc_counted_as_zero and summary.overall == pytest.approx(0.6 * 75 + 0.05 * 75)


def test_overall_formula_and_duplicates():
    assert overall(100.0, 100.0, 100.0) == pytest.approx(100.0)
    assert overall(50.0, 20.0, 80.0) == pytest.approx(30 + 7 + 4)
    item = GeniusItem(dimension="implicit_pattern", id=1, vc_hints=0, rc=[2], aq=[2])
    with pytest.raises(ValueError, match="more than one"):
        summarize([item, item])


def test_bundled_cases_feed_the_scoring():
    cases = load_dataset(SAMPLE).cases
    items = [
        {
            "dimension": case.dimension,
            "id": case.id,
            "vc_hints": len(case.vc_hints),
            "rc": [2, 2, 2],
            "aq": [1, 1, 1],
            "vc": [{"rounds": [2, 2, 2]} for _ in case.vc_hints],
        }
        for case in cases
    ]
    summary = summarize(items, expected=[case.key for case in cases])
    assert summary.missing_items == []
    assert (summary.rc.mean, summary.vc.mean, summary.aq.mean) == (100.0, 100.0, 50.0)
    assert summary.vc.scored == 8  # multi_semantic's two cases have no VC
    assert summary.overall == pytest.approx(60 + 35 + 2.5)
