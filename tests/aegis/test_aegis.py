"""AEGIS: loader (real file and quirks), judge prompt and parser, scoring and aggregation."""

from __future__ import annotations

import copy
import json
import math
from collections import Counter
from pathlib import Path

import pytest
from PIL import Image

from tests.support.shared_data import shared_data
from umni.util.errors import InputError, InputErrors, ParseFailure
from umni_cases import bundled
from umni_graphs.aegis import cases as C
from umni_graphs.aegis import prompts as P
from umni_graphs.aegis import scoring as S

BUNDLED = bundled("aegis") / "annotation.json"


class Img:
    """A stand-in image: any non-str value travels through the parts helpers untouched."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"Img({self.name})"


@pytest.fixture(scope="module")
def real() -> C.AegisCaseSet:
    """The real annotation file; its tests are skipped where it is absent (see tests/support/shared_data.py)."""
    return C.load_cases(shared_data("aegis", "annotation.json"))


@pytest.fixture(scope="module")
def mine() -> C.AegisCaseSet:
    return C.load_cases(BUNDLED)


def quirks_where(case_set: C.AegisCaseSet, text: str) -> list[C.Quirk]:
    return [q for q in case_set.quirks if text in q.what]


# ------------------------------------------------------------------------------------------------
# The real file


def test_real_file_loads_every_record(real):
    assert len(real) == 1050
    assert Counter(c.task for c in real.cases) == {"understanding": 315, "generation": 314, "editing": 315, "interleaved": 106}
    assert set(Counter(c.category for c in real.cases).values()) == {50}
    assert Counter(c.domain_group for c in real.cases) == {"STEM": 350, "Humanities": 350, "Daily life": 350}
    assert {c.reasoning_type for c in real.cases} == set(C.REASONING_TYPES)
    assert all(c.checklist for c in real.cases)


def test_real_file_parsed_error_checklists_are_recovered(real):
    found = quirks_where(real, "parsed error")
    assert sorted(q.id for q in found) == [576, 728]
    assert "'e'" in next(q for q in found if q.id == 576).what
    assert "'活'" in next(q for q in found if q.id == 728).what
    c576, c728 = real.by_id(576), real.by_id(728)
    assert len(c576.checklist) == 11 and len(c728.checklist) == 8
    assert c576.checklist[4].tag == "Text"
    assert c576.checklist[4].question.startswith("Does the analysis explain that the lighting in the photo")
    assert c728.checklist[6].question.startswith("Is the swan-neck flask, as a piece of laboratory equipment")


def test_real_file_tag_and_reasoning_typos(real):
    imgae = quirks_where(real, "[Imgae]")
    assert sorted((q.id, q.field) for q in imgae) == [(17, "refined_question[12]"), (167, "refined_question[7]")]
    assert real.by_id(17).checklist[12].tag == "Image"
    casual = quirks_where(real, "'casual reasoning'")
    assert len(casual) == 31 and {564, 565, 1044} <= {q.id for q in casual}
    assert [q.id for q in quirks_where(real, "'comparison reasoning'")] == [560]
    assert real.by_id(560).reasoning_type == "comparative reasoning"
    assert real.by_id(564).reasoning_type == "causal reasoning"
    assert Counter(c.reasoning_type for c in real.cases)["causal reasoning"] == 92 + 31


def test_real_file_negative_items_and_list_ref_text(real):
    negative = quirks_where(real, "negatively phrased")
    by_id = Counter(q.id for q in negative)
    assert by_id[0] == 1 and by_id[610] == 4 and by_id[677] == 1 and by_id[626] == 3
    assert ("refined_question[4]" in {q.field for q in negative if q.id == 0})
    # guarded phrasings ("avoid incorrectly ...", "without incorrectly ...") are not reported
    assert 116 not in by_id and 36 not in by_id and 367 not in by_id
    lists = [q for q in real.quirks if q.field == "ref_text"]
    assert len(lists) == 24 and all(real.by_id(q.id).ref_text == "" for q in lists)


def test_real_file_images_are_listed_as_missing_not_raised(real):
    missing = real.missing_images()
    assert len(missing) == sum(len(c.input_image) + len(c.ref_image) for c in real.cases) == 2012
    assert missing[0] == (0, "activity/1_1_input.jpg")


def test_negative_phrasing_heuristic():
    assert C.looks_negative("Does the response incorrectly claim that X?")
    assert C.looks_negative("Does the figure wear a top hat, which would be incorrect?")
    assert C.looks_negative("Does the response fail to provide the name of any painting?")
    assert C.looks_negative("Are there any visual artifacts left where the logo was removed?")
    assert not C.looks_negative("Does the response avoid incorrectly identifying the baboon as the answer?")
    assert not C.looks_negative("Does the response name region 1, without incorrectly suggesting region 2?")
    assert not C.looks_negative("Does the text say the buildings failed to achieve perfect symmetry?")


def test_salvage_reads_string_literals_and_never_runs_code():
    text = 'parsed error: [\n "[Text] first, with \\"quotes\\"",\nx "[Image] __import__(\'os\').system(\'echo hi\')"\n]'
    items, stray = C.salvage_checklist_text(text)
    assert items == ['[Text] first, with "quotes"', "[Image] __import__('os').system('echo hi')"]
    assert stray == "x"
    assert C.salvage_checklist_text('parsed error: ["[Text] a", "[Text] b"]') == (["[Text] a", "[Text] b"], "")


# ------------------------------------------------------------------------------------------------
# Malformed files


def good_record(**changes) -> dict:
    record = {
        "id": 1,
        "task": "editing",
        "input_type": "single_image",
        "prompt": "Edit <image1>.",
        "clear_prompt": "Make <image1> blue.",
        "input_image": ["art/a.png"],
        "keywords": "",
        "refined_keywords": "",
        "reasoning_type": "logical reasoning",
        "category": "art",
        "ref_text": "",
        "ref_image": ["art/a_ref.png"],
        "refined_question": ["[Image] Is it blue?"],
    }
    record.update(changes)
    return record


def write(tmp_path: Path, records) -> Path:
    path = tmp_path / "annotation.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def test_malformed_records_are_all_reported_with_file_record_and_field(tmp_path):
    records = [good_record(id=0)]
    missing = good_record(id=1)
    del missing["clear_prompt"]
    records += [
        missing,
        good_record(id=2, category="astrology"),
        good_record(id=3, refined_question=["[Text] ok", "[Foo] what tag is this?"]),
        good_record(id=4, prompt="Compare <image1> and <image2>."),
        good_record(id=0),
        good_record(id=6, input_image=["../../secret.png"]),
        good_record(id=7, ref_image=["/etc/passwd"]),
        "not a record",
        good_record(id=9, ref_text=[1, 2]),
        good_record(id=10, category="astrology", input_image=["../x.png"]),
    ]
    path = write(tmp_path, records)
    with pytest.raises(InputErrors) as info:
        C.load_cases(path)
    errors = {(e.record, e.field): e for e in info.value.errors}
    assert all(e.path == str(path) for e in info.value.errors)
    assert set(errors) == {
        ("1 (id 1)", "clear_prompt"),
        ("2 (id 2)", "category"),
        ("3 (id 3)", "refined_question[1]"),
        ("4 (id 4)", None),
        ("5 (id 0)", "id"),
        ("6 (id 6)", "input_image[0]"),
        ("7 (id 7)", "ref_image[0]"),
        ("8", None),
        ("9 (id 9)", "ref_text"),
        ("10 (id 10)", "category"),  # both problems of one record in one pass
        ("10 (id 10)", "input_image[0]"),
    }
    assert len(info.value.errors) == len(errors)  # nothing reported twice
    assert "missing" in errors[("1 (id 1)", "clear_prompt")].message
    assert "'biology'" in errors[("2 (id 2)", "category")].message  # names what would be allowed
    assert "[Foo]" in errors[("3 (id 3)", "refined_question[1]")].message
    assert "<image2>" in errors[("4 (id 4)", None)].message
    assert "duplicate" in errors[("5 (id 0)", "id")].message
    assert "'..'" in errors[("6 (id 6)", "input_image[0]")].message
    assert "outside" in errors[("7 (id 7)", "ref_image[0]")].message
    text = str(info.value)
    assert f"{path}, record 2 (id 2), field 'category'" in text


def test_file_level_errors(tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text('[{"id": 1,\n', encoding="utf-8")
    with pytest.raises(InputError) as info:
        C.load_cases(bad)
    assert info.value.path == str(bad) and info.value.line == 2
    with pytest.raises(InputError, match="JSON list"):
        C.load_cases(write(tmp_path, {"id": 1}))
    with pytest.raises(InputError, match="not found"):
        C.load_cases(tmp_path / "nope.json")


def test_path_confinement(tmp_path):
    root = tmp_path / "set"
    (root / "images" / "art").mkdir(parents=True)
    assert C.resolve_image_path(root, "art/a.png") == (root / "images" / "art" / "a.png").resolve()
    assert C.resolve_image_path(root, "images/art/a.png") == (root / "images" / "art" / "a.png").resolve()
    assert C.resolve_image_path(root, str(root / "images" / "b.png")) == (root / "images" / "b.png").resolve()
    for climbing in ("../x.png", "art/../b.png", "images/../../x.png"):
        with pytest.raises(ValueError, match="'..'"):
            C.resolve_image_path(root, climbing)
    for outside in (str(tmp_path / "x.png"), "/etc/passwd"):
        with pytest.raises(ValueError, match="outside"):
            C.resolve_image_path(root, outside)
    (root / "images" / "link").symlink_to(tmp_path)  # a symlink out of the folder is outside too
    with pytest.raises(ValueError, match="outside"):
        C.resolve_image_path(root, "link/x.png")


def test_missing_images_are_listed_by_id_and_path(tmp_path):
    path = write(tmp_path, [good_record(id=5), good_record(id=6, input_image=["art/b.png"], ref_image=[])])
    (tmp_path / "images" / "art").mkdir(parents=True)
    Image.new("RGB", (4, 4)).save(tmp_path / "images" / "art" / "a.png")
    case_set = C.load_cases(path)
    assert case_set.missing_images() == [(5, "art/a_ref.png"), (6, "art/b.png")]


def test_quirks_are_repaired_in_a_small_file(tmp_path):
    record = good_record(
        id=3,
        reasoning_type="casual reasoning",
        ref_text=[],
        refined_question=['parsed error: [\n "[Imgae] Is it blue?",\n "[Text] Does it incorrectly say red?"\n]'],
        extra_field=1,
    )
    case_set = C.load_cases(write(tmp_path, [record]))
    case = case_set.cases[0]
    assert case.reasoning_type == "causal reasoning" and case.ref_text == ""
    assert [i.render() for i in case.checklist] == ["[Image] Is it blue?", "[Text] Does it incorrectly say red?"]
    fields = sorted(q.field for q in case_set.quirks)
    assert fields == ["extra_field", "reasoning_type", "ref_text", "refined_question", "refined_question[0]", "refined_question[1]"]
    assert all(q.id == 3 for q in case_set.quirks)


# ------------------------------------------------------------------------------------------------
# The bundled set


def test_bundled_set_is_complete(mine):
    assert Counter(c.task for c in mine.cases) == {"understanding": 2, "generation": 2, "editing": 2, "interleaved": 2}
    assert {c.domain_group for c in mine.cases} == {"STEM", "Humanities", "Daily life"}
    assert mine.missing_images() == []
    for case in mine.cases:
        for rel in (*case.input_image, *case.ref_image):
            assert rel.split("/")[0] == case.category
            with Image.open(mine.resolve_image(rel)) as image:
                assert image.size == (128, 128) and image.format == "PNG"
    assert [(q.id, q.field) for q in mine.quirks] == [(1, "refined_question[2]")]


# ------------------------------------------------------------------------------------------------
# Prompts


def test_split_image_markers_numbered_and_bare():
    a, b = Img("a"), Img("b")
    segs = P.split_image_markers("x <image2> y <image1>", [a, b])
    assert segs == [P.TextSegment("x "), P.ImageSegment("<image2>", 1, b), P.TextSegment(" y "), P.ImageSegment("<image1>", 0, a)]
    segs = P.split_image_markers("<image>one<image>two<image>", [a, b])
    assert [s.slot for s in segs if isinstance(s, P.ImageSegment)] == [0, 1, 2]
    assert [s.image for s in segs if isinstance(s, P.ImageSegment)] == [a, b, None]
    assert P.split_image_markers("no markers") == [P.TextSegment("no markers")]


def test_model_parts_put_images_at_placeholders(mine):
    case = mine.by_id(0)
    img = Img("tri")
    assert P.model_parts(case, [img]) == ["The two shorter sides of the triangle in", img, "are labelled. How long is the side without a label?"]
    clear = P.model_parts(case, [img], "clear_prompt")
    assert clear[0] is img and clear[1].startswith("shows a right triangle")
    # a rewritten instruction that lost the placeholders still shows the image (first)
    assert P.model_parts(case, [img], instruction="What is the hypotenuse?") == [img, "What is the hypotenuse?"]
    guided = P.model_parts(mine.by_id(7), [img], marker_guide=True)
    assert guided[0].startswith(P.INTERLEAVED_MARKER_GUIDE) and guided[1] is img
    with pytest.raises(ValueError):
        P.model_prompt(case, "explicit")  # type: ignore[arg-type]


def test_judge_parts_carry_everything_the_judge_needs(mine):
    case = mine.by_id(6)
    refs, outs = [Img("r1"), Img("r2")], [Img("o1"), Img("o2")]
    parts = P.judge_parts(case, output_text="Chrysalis first <image> then a butterfly <image>", output_images=outs, reference_images=refs)
    images = [p for p in parts if not isinstance(p, str)]
    assert images == refs + outs
    text = "\n".join(p for p in parts if isinstance(p, str))
    assert "interleaved" in text and "biology" in text and case.clear_prompt in text
    assert "answer_list" in text and "reason_list" in text
    numbered = [line for line in text.splitlines() if line[:1].isdigit() and ". [" in line[:4]]
    assert numbered == [f"{i}. {item.render()}" for i, item in enumerate(case.checklist, start=1)]
    assert "exactly 5 entries" in text
    # the output image follows its marker's label
    assert parts[parts.index(outs[0]) - 1].endswith("[output image 1]")

    understanding = P.judge_parts(mine.by_id(0), output_text="It is 5.", input_images=[Img("in")])
    assert "(no output image)" in "\n".join(p for p in understanding if isinstance(p, str))
    with pytest.raises(ValueError, match="inference failure"):
        P.judge_parts(case, output_text="  ")


def test_rewrite_and_plan_helpers(mine):
    case = mine.by_id(3)
    assert case.prompt in P.rewrite_instruction(case) and "<image1>" in P.rewrite_instruction(case)
    assert P.parse_rewrite("```text\nRewritten prompt: Draw the flag of Japan.\n```") == "Draw the flag of Japan."
    with pytest.raises(ParseFailure):
        P.parse_rewrite("``` ```")
    assert "what must stay" in P.plan_instruction(mine.by_id(4))
    combined = P.prompt_with_plan(case, "  Draw a white flag with a red disc.  ")
    assert combined.startswith(case.prompt) and combined.endswith("Draw a white flag with a red disc.")
    marker = P.marker_image_prompt(mine.by_id(6), "First <image> then <image>.", 1)
    assert "First [picture 1] then [DRAW THIS PICTURE]." in marker
    with pytest.raises(ValueError):
        P.marker_image_prompt(mine.by_id(6), "First <image>.", 1)


# ------------------------------------------------------------------------------------------------
# Parser


def test_parser_plain_fenced_and_prose():
    plain = '{"answer_list": ["Y", "N", "Y"], "reason_list": ["a", "b", "c"]}'
    verdict = P.parse_judge_reply(plain, 3)
    assert verdict.answers == (True, False, True) and verdict.reasons == ("a", "b", "c") and verdict.letters == ("Y", "N", "Y")
    fenced = 'Here is my grading.\n```json\n{"answer_list": ["yes", "No", "y"],\n "reason_list": []}\n```\nDone.'
    assert P.parse_judge_reply(fenced, 3).answers == (True, False, True)
    prose = 'I looked at {the image}. Result: {"note": 1} {"answer_list": ["N", "Y"]} hope that helps'
    assert P.parse_judge_reply(prose, 2).answers == (False, True) and P.parse_judge_reply(prose, 2).from_prose
    python_style = "{'answer_list': ['Y', 'N'], 'reason_list': [\"it's there\", 'missing']}"
    assert P.parse_judge_reply(python_style, 2).reasons == ("it's there", "missing")
    with pytest.raises(ParseFailure, match="answer 1"):  # officially N: JSON booleans are not the Y strings
        P.parse_judge_reply('{"answer_list": [true, false]}', 2)


@pytest.mark.parametrize(
    "reply, message",
    [
        ('{"answer_list": ["Y", "N"]}', "2 answers for 3"),
        ('{"answer_list": ["Y", "N", "Y", "Y"]}', "4 answers for 3"),
        ('{"answer_list": ["Y", "maybe", "N"]}', "answer 2"),
        ('{"answer_list": ["Y", null, "N"]}', "answer 2"),
        ('{"answer_list": "YYN"}', "must be a list"),
        ("All three items are satisfied: Y, Y, Y.", "no JSON object"),
        ('{"answers": ["Y", "Y", "Y"]}', "no JSON object"),
        ("{'answer_list': __import__('os').system('echo pwned')}", "no JSON object"),
    ],
)
def test_parser_failures_are_parse_failures(reply, message):
    with pytest.raises(ParseFailure, match=message) as info:
        P.parse_judge_reply(reply, 3)
    assert info.value.raw == reply


# ------------------------------------------------------------------------------------------------
# Scoring


def test_item_score_is_the_fraction_of_yes():
    assert S.item_score([True, False, True, True]) == 0.75
    assert S.item_score(P.ChecklistVerdict((True, False, False))) == pytest.approx(1 / 3)
    assert S.item_score([True, False, True, True], inverted=[3]) == 0.5
    assert S.item_score([True, False], inverted=[1]) == 1.0
    with pytest.raises(ValueError):
        S.item_score([])
    with pytest.raises(ValueError):
        S.item_score([True], inverted=[1])


def verdict(letters: str) -> P.ChecklistVerdict:
    return P.ChecklistVerdict(tuple(ch == "Y" for ch in letters))


def bundled_results(mine: C.AegisCaseSet) -> list[S.CaseResult]:
    by = mine.by_id
    return [
        S.scored(by(0), verdict("YY")),  # understanding, mathematics (STEM), logical: 1
        S.scored(by(1), verdict("YYN")),  # understanding, traffic (Daily life), causal: 2/3
        S.scored(by(2), verdict("YNNN")),  # generation, astronomy_geography (STEM), spatial: 1/4
        S.inference_failure(by(3), "no image"),  # generation, culture (Humanities), logical
        S.scored(by(4), verdict("YYY")),  # editing, physics (STEM), temporal: 1
        S.evaluation_failure(by(5), "wrong length"),  # editing, art (Humanities), analogical
        S.scored(by(6), verdict("YYNNN")),  # interleaved, biology (STEM), temporal: 2/5
        S.scored(by(7), verdict("NNNN")),  # interleaved, activity (Daily life), logical: 0
    ]


def test_aggregates_by_hand(mine):
    summary = S.summarize(bundled_results(mine))
    scores = [1, 2 / 3, 1 / 4, 1, 2 / 5, 0]
    assert summary.overall.mean == pytest.approx(sum(scores) / 6)  # 0.5527…
    assert summary.overall.mean == pytest.approx(0.552777777)
    assert (summary.overall.scored, summary.overall.inference_failures, summary.overall.evaluation_failures) == (6, 1, 1)
    assert summary.overall.total == 8

    task = summary.by_task
    assert list(task) == ["understanding", "generation", "editing", "interleaved"]
    assert task["understanding"].mean == pytest.approx(5 / 6) and task["understanding"].std == pytest.approx(1 / 6)
    assert task["generation"].mean == 0.25 and task["generation"].inference_failures == 1
    assert task["editing"].mean == 1.0 and task["editing"].evaluation_failures == 1
    assert task["interleaved"].mean == pytest.approx(0.2) and task["interleaved"].std == pytest.approx(0.2)

    group = summary.by_domain_group
    assert group["STEM"].mean == pytest.approx((1 + 0.25 + 1 + 0.4) / 4)  # 0.6625
    assert group["Daily life"].mean == pytest.approx(1 / 3)
    humanities = group["Humanities"]
    assert humanities.mean is None and humanities.std is None and (humanities.inference_failures, humanities.evaluation_failures) == (1, 1)

    reasoning = summary.by_reasoning_type
    assert list(reasoning) == ["spatial reasoning", "temporal reasoning", "causal reasoning", "analogical reasoning", "logical reasoning"]
    assert reasoning["logical reasoning"].mean == 0.5 and reasoning["logical reasoning"].inference_failures == 1
    assert reasoning["temporal reasoning"].mean == pytest.approx(0.7)
    assert reasoning["analogical reasoning"].mean is None

    assert summary.by_category["mathematics"].mean == 1.0 and summary.by_category["activity"].mean == 0.0
    assert summary.by_task_and_group["understanding/Daily life"].mean == pytest.approx(2 / 3)
    assert summary.by_task_and_group["generation/Humanities"].inference_failures == 1
    assert summary.inference_failed_ids == [3] and summary.evaluation_failed_ids == [5]
    json.loads(summary.model_dump_json())  # writable as a report


def test_negative_items_can_be_inverted(mine):
    case = mine.by_id(1)  # item 3 is "Does the response incorrectly claim ...?"
    assert S.scored(case, verdict("YYN")).score == pytest.approx(2 / 3)  # official: fraction of Y
    assert S.scored(case, verdict("YYN"), invert_negative=True).score == 1.0
    assert S.scored(case, verdict("YYY"), invert_negative=True).score == pytest.approx(2 / 3)
    with pytest.raises(ValueError):
        S.scored(case, verdict("YY"))


def test_duplicate_results_are_refused(mine):
    results = bundled_results(mine)
    with pytest.raises(ValueError, match="more than one result"):
        S.summarize(results + [copy.copy(results[0])])


def test_judge_round_trip_on_bundled_case(mine):
    case = mine.by_id(2)
    parts = P.judge_parts(case, output_images=[Img("out")], reference_images=[Img("ref")])
    text = "\n".join(p for p in parts if isinstance(p, str))
    n = sum(1 for line in text.splitlines() if line[:2] in {f"{i}." for i in range(1, 10)})
    assert n == len(case.checklist) == 4
    reply = "```json\n" + json.dumps({"answer_list": ["Y", "Y", "N", "Y"], "reason_list": ["", "", "", ""]}) + "\n```"
    result = S.scored(case, P.parse_judge_reply(reply, len(case.checklist)))
    assert result.score == 0.75 and result.domain_group == "STEM"


def test_real_file_aggregates_by_group(real):
    # every case passes exactly its first item: the case score is 1/len(checklist)
    results = [S.scored(c, P.ChecklistVerdict((True,) + (False,) * (len(c.checklist) - 1))) for c in real.cases]
    summary = S.summarize(results)
    assert summary.overall.scored == 1050
    assert {k: v.scored for k, v in summary.by_domain_group.items()} == {"STEM": 350, "Humanities": 350, "Daily life": 350}
    expected = math.fsum(1 / len(c.checklist) for c in real.cases) / 1050
    assert summary.overall.mean == pytest.approx(expected)
    assert len(summary.by_category) == 21 and len(summary.by_task_and_group) == 12
    assert summary.by_reasoning_type["causal reasoning"].scored == 123
