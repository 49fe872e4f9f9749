"""WISE: loading the real files, id ranges, judge prompts and parsers, WiScore and Overall by hand."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support.shared_data import shared_data
from umni.util.errors import InputError, InputErrors, InvalidAnswer, ParseFailure
from umni_cases import bundled
from umni_graphs.wise.cases import (
    CATEGORIES,
    CATEGORY_RANGES,
    category_of,
    expected_ids,
    load_prompts,
    load_set,
)
from umni_graphs.wise.prompts import (
    ANSWER_HEADING,
    LegacyScores,
    legacy_judge_prompt,
    parse_legacy_answer,
    parse_verified_answer,
    verified_judge_prompt,
)
from umni_graphs.wise.scoring import (
    LegacyJudgement,
    VerifiedJudgement,
    overall,
    summarize_legacy,
    summarize_verified,
    wiscore,
)


def real_data() -> Path:
    """The real WISE files beside the repository (../shared/data/wise); a missing folder fails the test."""
    return shared_data("wise")


#: How the official files spell each category (the scoring itself goes by id).
OFFICIAL_CATEGORY = {
    "culture": "Cultural knowledge",
    "time": "time",
    "space": "Space",
    "biology": "Biology",
    "physics": "Physical Knowledge",
    "chemistry": "Chemistry",
}


# --------------------------------------------------------------------------------------- loading


@pytest.mark.parametrize(
    ("variant", "rewrite"),
    [("legacy", False), ("legacy", True), ("verified", False)],
    ids=["legacy", "rewrite", "verified"],
)
def test_real_sets_load_all_1000_prompts_with_categories_matching_id_ranges(variant, rewrite):
    cases = load_set(real_data() / variant, variant, rewrite=rewrite)
    assert [p.prompt_id for p in cases.prompts] == list(range(1, 1001))
    assert cases.missing == []
    sizes = {name: len(ids) for name, ids in cases.ids_by_category().items()}
    expected_sizes = {name: high - low + 1 for name, (low, high) in CATEGORY_RANGES[variant].items()}
    assert sizes == expected_sizes
    mismatched = [
        (p.prompt_id, p.Category)
        for p in cases.prompts
        if p.Category != OFFICIAL_CATEGORY[cases.category_of(p.prompt_id)]
    ]
    # The one known quirk: a biology prompt of the legacy rewrite file is labelled 'Ecology'.
    assert mismatched == ([(748, "Ecology")] if rewrite else [])


def test_verified_split_files_hold_the_same_prompts_as_merge(tmp_path):
    for name in (
        "cultural_common_sense_verified.json",
        "spatio-temporal_reasoning_verified.json",
        "natural_science_verified.json",
    ):
        (tmp_path / name).write_bytes((real_data() / "verified" / name).read_bytes())
    split = load_set(tmp_path, "verified")
    merged = load_set(real_data() / "verified", "verified")
    assert [f.name for f in merged.files] == ["merge.json"]
    assert split.prompts == merged.prompts


def test_rewrite_prompts_share_ids_but_not_text():
    original = load_set(real_data() / "legacy", "legacy").by_id()
    rewritten = load_set(real_data() / "legacy", "legacy", rewrite=True).by_id()
    assert original.keys() == rewritten.keys()
    assert original[1].Prompt != rewritten[1].Prompt


def test_category_ranges_differ_between_sets():
    assert category_of(567, "legacy") == "time" and category_of(567, "verified") == "space"
    assert category_of(521, "legacy") == "time" and category_of(521, "verified") == "space"
    assert category_of(700, "legacy") == "space" and category_of(700, "verified") == "biology"
    assert category_of(1000, "verified") == "chemistry"
    assert category_of(881, "legacy") == "physics" and category_of(881, "verified") == "chemistry"
    with pytest.raises(ValueError):
        category_of(1001, "legacy")
    assert len(expected_ids("verified", ["time"])) == 120
    assert len(expected_ids("legacy", ["time"])) == 167


@pytest.mark.parametrize("variant", ["legacy", "verified"])
def test_bundled_sample_has_every_category_and_reports_the_rest_missing(variant):
    cases = load_set(bundled("wise") / variant, variant)
    groups = cases.ids_by_category()
    assert all(groups[name] for name in CATEGORIES), groups
    assert len(cases.prompts) == 18
    assert len(cases.missing) == 1000 - 18
    assert set(cases.missing).isdisjoint(p.prompt_id for p in cases.prompts)


def test_bundled_legacy_rewrite_matches_ids():
    plain = load_set(bundled("wise") / "legacy", "legacy")
    rewrite = load_set(bundled("wise") / "legacy", "legacy", rewrite=True)
    assert [p.prompt_id for p in plain.prompts] == [p.prompt_id for p in rewrite.prompts]
    assert all(a.Prompt != b.Prompt for a, b in zip(plain.prompts, rewrite.prompts))


def test_malformed_records_are_all_reported_with_file_record_and_field(tmp_path):
    good = {"prompt_id": 5, "Prompt": "p", "Explanation": "e", "Category": "Cultural knowledge", "Subcategory": "s"}
    records = [
        good,
        {**good, "prompt_id": "6"},  # a string id
        {k: v for k, v in good.items() if k != "Explanation"} | {"prompt_id": 7},  # missing field
        {**good, "prompt_id": 5},  # duplicate
        ["not", "an", "object"],
        {**good, "prompt_id": 8, "Prompt": ""},  # empty prompt
    ]
    path = tmp_path / "cultural_common_sense.json"
    path.write_text(json.dumps(records))
    with pytest.raises(InputErrors) as info:
        load_prompts(path)
    found = {(e.record, e.field) for e in info.value.errors}
    assert found == {
        ("#1", "prompt_id"),
        ("#2 (prompt_id 7)", "Explanation"),
        ("#3 (prompt_id 5)", "prompt_id"),
        ("#4", None),
        ("#5 (prompt_id 8)", "Prompt"),
    }
    assert all(e.path == str(path) for e in info.value.errors)
    assert "record #2 (prompt_id 7), field 'Explanation'" in str(info.value)


def test_file_level_problems_name_the_file(tmp_path):
    bad_json = tmp_path / "a.json"
    bad_json.write_text('[{"prompt_id": 1,')
    with pytest.raises(InputError, match="not valid JSON") as info:
        load_prompts(bad_json)
    assert info.value.path == str(bad_json) and info.value.line == 1
    not_list = tmp_path / "b.json"
    not_list.write_text("{}")
    with pytest.raises(InputError, match="JSON list"):
        load_prompts(not_list)
    with pytest.raises(InputError, match="no legacy WISE files"):
        load_set(tmp_path, "legacy")
    with pytest.raises(InputError, match="rewrite"):
        load_set(tmp_path, "verified", rewrite=True)


def test_duplicate_ids_across_files_are_errors(tmp_path):
    record = {"prompt_id": 3, "Prompt": "p", "Explanation": "e", "Category": "c", "Subcategory": "s"}
    for name in ("cultural_common_sense.json", "natural_science.json"):
        (tmp_path / name).write_text(json.dumps([record]))
    with pytest.raises(InputErrors, match="also appears in cultural_common_sense.json"):
        load_set(tmp_path, "legacy")


# --------------------------------------------------------------------------------------- prompts


def _template_lines(prompt: str) -> list[str]:
    tail = prompt.split(ANSWER_HEADING)[-1].strip().splitlines()
    return tail


def test_judge_prompts_end_with_answer_templates_in_label_range_form():
    legacy = legacy_judge_prompt("A red fruit", "An apple")
    assert '"A red fruit"' in legacy and '"An apple"' in legacy
    assert _template_lines(legacy) == ["Consistency: <0-2>", "Realism: <0-2>", "Aesthetic Quality: <0-2>"]
    verified = verified_judge_prompt("A red fruit", "An apple")
    assert _template_lines(verified) == ["Score: <0-1>"]
    for prompt in (legacy, verified):
        assert all(re.fullmatch(r"[A-Za-z ]+: <\d-\d>", line) for line in _template_lines(prompt))


# --------------------------------------------------------------------------------------- parsers


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Consistency: 2\nRealism: 1\nAesthetic Quality: 0", (2, 1, 0)),
        ("**Consistency**: 1\n**Realism** 2\n**Aesthetic Quality** 1", (1, 2, 1)),
        ("consistency 0 realism 0 AESTHETIC QUALITY: 2", (0, 0, 2)),
        ("Consistency: 1\nRealism: 1\nAesthetic Quality: 1\nOn reflection, Consistency: 0", (0, 1, 1)),
        ("Consistency: 2.0\nRealism: 1\nAesthetic Quality: 0", (2, 1, 0)),
        ("2\n1\n0", (2, 1, 0)),
        ("\n 1\n 2 \n0\n", (1, 2, 0)),
        ("2\n1\n0\n1", (2, 1, 0)),  # the official fallback takes the first three bare lines
    ],
)
def test_legacy_parser_reads_marks(text, expected):
    assert parse_legacy_answer(text) == LegacyScores(*expected)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("", ParseFailure),
        ("The image is lovely.", ParseFailure),
        ("Consistency: 2\nRealism: 1", ParseFailure),  # a mark missing
        ("Consistency: <0-2>\nRealism: <0-2>\nAesthetic Quality: <0-2>", ParseFailure),  # template echoed
        ("2\n1", ParseFailure),  # only two bare digits
        ("3\n1\n0", ParseFailure),  # a bare line is a mark only when it is 0, 1 or 2
        ("**1**\n**2**\n**0**", ParseFailure),  # bold bare digits are not bare lines officially
        ("Consistency: 3\nRealism: 1\nAesthetic Quality: 0", InvalidAnswer),
        ("Consistency: 10\nRealism: 1\nAesthetic Quality: 0", InvalidAnswer),
        ("Consistency: 1.5\nRealism: 1\nAesthetic Quality: 0", InvalidAnswer),
    ],
)
def test_legacy_parser_refuses_unusable_answers(text, error):
    with pytest.raises(error) as info:
        parse_legacy_answer(text)
    assert info.value.raw == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [("Score: 1", 1), ("score: 0", 0), ("**Score**: 1", 1), ("Score 0", 0), ("Score: 0\nafter thought, Score: 1", 0)],
)
def test_verified_parser_reads_binary_score(text, expected):
    assert parse_verified_answer(text) == expected


@pytest.mark.parametrize(
    ("text", "error"),
    [("Yes", ParseFailure), ("Score: <0-1>", ParseFailure), ("Score: 2", InvalidAnswer), ("Score：1", ParseFailure)],
)
def test_verified_parser_refuses_unusable_answers(text, error):
    with pytest.raises(error):
        parse_verified_answer(text)


# --------------------------------------------------------------------------------------- scoring


def test_wiscore_by_hand():
    assert wiscore(2, 2, 2) == pytest.approx(1.0)
    assert wiscore(0, 0, 0) == 0.0
    assert wiscore(2, 1, 0) == pytest.approx((1.4 + 0.2 + 0.0) / 2)  # 0.8
    assert wiscore(1, 2, 1) == pytest.approx((0.7 + 0.4 + 0.1) / 2)  # 0.6
    assert wiscore(0, 1, 2) == pytest.approx((0.0 + 0.2 + 0.2) / 2)  # 0.2


def test_legacy_summary_by_hand():
    # One or two prompts per legacy category; ids picked at the range edges.
    judgements = [
        LegacyJudgement(prompt_id=1, consistency=2, realism=2, aesthetic_quality=2),  # culture 1.0
        LegacyJudgement(prompt_id=400, consistency=2, realism=1, aesthetic_quality=0),  # culture 0.8
        LegacyJudgement(prompt_id=401, consistency=1, realism=2, aesthetic_quality=1),  # time 0.6
        LegacyJudgement(prompt_id=567, failure="parse"),  # time: failed, not a zero
        {"prompt_id": 568, "consistency": 0, "realism": 1, "aesthetic_quality": 2},  # space 0.2
        LegacyJudgement(prompt_id=700, failure="missing_image"),  # space: failed
        LegacyJudgement(prompt_id=701, consistency=2, realism=1, aesthetic_quality=0),  # biology 0.8
        LegacyJudgement(prompt_id=801, consistency=0, realism=0, aesthetic_quality=0),  # physics 0.0
        LegacyJudgement(prompt_id=1000, consistency=1, realism=1, aesthetic_quality=1),  # chemistry 0.5
    ]
    expected = [1, 400, 401, 567, 568, 700, 701, 801, 1000, 999]  # 999 was never judged
    summary = summarize_legacy(judgements, expected=expected)
    means = {name: r.mean for name, r in summary.categories.items()}
    assert means == pytest.approx(
        {"culture": 0.9, "time": 0.6, "space": 0.2, "biology": 0.8, "physics": 0.0, "chemistry": 0.5}
    )
    # 0.4*0.9 + 0.167*0.6 + 0.133*0.2 + 0.1*(0.8 + 0 + 0.5) = 0.36 + 0.1002 + 0.0266 + 0.13
    assert summary.overall == pytest.approx(0.6168)
    assert summary.categories["time"].scored == 1 and summary.categories["time"].failures == {"parse": 1}
    assert summary.categories["space"].failures == {"missing_image": 1}
    assert summary.failures == {"parse": 1, "missing_image": 1}
    assert summary.missing_ids == [999]
    assert summary.categories["culture"].components == pytest.approx(
        {"consistency": 2.0, "realism": 1.5, "aesthetic_quality": 1.0}
    )


def test_legacy_overall_is_none_when_a_category_has_no_score():
    summary = summarize_legacy([LegacyJudgement(prompt_id=1, consistency=2, realism=2, aesthetic_quality=2)])
    assert summary.categories["culture"].mean == pytest.approx(1.0)  # 0.9999999999999999 in the official float order
    assert summary.overall is None
    assert len(summary.missing_ids) == 999


def test_verified_summary_by_hand():
    scores = {1: 1, 2: 0, 3: 1, 4: 1, 401: 1, 520: 0, 521: 1, 641: 0, 761: 1, 762: 1, 881: 0, 1000: 1}
    judgements = [VerifiedJudgement(prompt_id=i, score=s) for i, s in scores.items()]
    judgements.append(VerifiedJudgement(prompt_id=640, failure="parse"))
    summary = summarize_verified(judgements, expected=[*scores, 640, 700])
    means = {name: r.mean for name, r in summary.categories.items()}
    assert means == pytest.approx(
        {"culture": 0.75, "time": 0.5, "space": 1.0, "biology": 0.0, "physics": 1.0, "chemistry": 0.5}
    )
    # 0.40*0.75 + 0.12*(0.5 + 1.0 + 0.0 + 1.0 + 0.5) = 0.30 + 0.36
    assert summary.overall == pytest.approx(0.66)
    assert summary.categories["space"].failures == {"parse": 1} and summary.categories["space"].scored == 1
    assert summary.missing_ids == [700]
    assert summary.metric == "accuracy"


def test_overall_weights_sum_to_one():
    assert overall(dict.fromkeys(CATEGORIES, 1.0), "legacy") == pytest.approx(1.0)
    assert overall(dict.fromkeys(CATEGORIES, 1.0), "verified") == pytest.approx(1.0)


def test_judgement_records_refuse_ambiguous_input():
    with pytest.raises(ValueError):
        LegacyJudgement(prompt_id=1, consistency=2, realism=1)  # a mark missing, no failure
    with pytest.raises(ValueError):
        LegacyJudgement(prompt_id=1, consistency=2, realism=1, aesthetic_quality=0, failure="parse")
    with pytest.raises(ValueError):
        LegacyJudgement(prompt_id=1, consistency=3, realism=1, aesthetic_quality=0)
    with pytest.raises(ValueError):
        VerifiedJudgement(prompt_id=1)
    with pytest.raises(ValueError, match="more than one"):
        summarize_verified([VerifiedJudgement(prompt_id=1, score=1), VerifiedJudgement(prompt_id=1, score=0)])
    with pytest.raises(ValueError, match="not one of the expected"):
        summarize_verified([VerifiedJudgement(prompt_id=5, score=1)], expected=[1, 2])
