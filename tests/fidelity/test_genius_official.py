"""GENIUS scores against the semantics of the official code (arctanxarc/GENIUS ``eval.py``, ``cal_score.py``).

Official rules restated: each metric is judged three times; the item's mark is ``round(mean)``
(Python's round, ties to even). Several vc_hints are averaged within each round first, a hint that
names no image counting 0, then the three per-round averages are averaged and rounded. The judge is
asked ``Copy`` once per hint, in order; ``Copy: 0`` means the output copies the reference, and the
first copy stops the checks and zeroes the item's VC. Replies are read with the first match of
``Label\\s*Words\\s*[:：]\\s*(\\d+)``; no match reads 0. ``cal_score.py`` pools ×50 sums over items and
counts VC as 0 in the Overall when no item has one. Every expected number is worked out by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from umni.run.evaluation import RunRequest, evaluate
from umni.util.errors import InvalidAnswer, ParseFailure
from umni_graphs.genius.dataset import load_dimension
from umni_graphs.genius.graph import copy_question_needed, no_copy_found
from umni_graphs.genius.prompts import copy_check_prompt, official_reading, parse_judge_answer
from umni_graphs.genius.records import official_item
from umni_graphs.genius.scoring import (
    GeniusItem,
    HintJudgement,
    JudgeFailure,
    score_item,
    summarize,
    visual_consistency_mark,
)

PARSE = JudgeFailure(kind="parse")


def item(vc: list[HintJudgement], rc=(2, 2, 2), aq=(1, 1, 1), dimension="visual_constraint", id="x") -> GeniusItem:
    return GeniusItem(dimension=dimension, id=id, vc_hints=len(vc), vc_task=any(h.has_reference for h in vc) if vc else False,
                      rc=list(rc), aq=list(aq), vc=vc)


# -- Visual Consistency over several hints ----------------------------------------------------------


def test_hints_are_averaged_per_round_then_rounded_once():
    # rounds: (2+1)/2 = 1.5 three times -> mean 1.5 -> round 2 -> 100 (a mean of per-hint marks gave 75)
    scored = score_item(item([HintJudgement(rounds=[2, 2, 2]), HintJudgement(rounds=[1, 1, 1])]))
    assert scored.vc == 100.0


def test_per_round_averages_round_half_to_even():
    # (1+0)/2 = 0.5 in every round -> mean 0.5 -> round(0.5) = 0
    assert visual_consistency_mark([HintJudgement(rounds=[1, 1, 1]), HintJudgement(rounds=[0, 0, 0])]) == 0
    # rounds 1.5, 1.5, 0.5 -> mean 7/6 -> 1
    assert visual_consistency_mark([HintJudgement(rounds=[2, 2, 1]), HintJudgement(rounds=[1, 1, 0])]) == 1


def test_a_hint_without_an_image_counts_zero_in_every_round():
    # (2 + 0)/2 = 1 per round -> 1 -> 50
    scored = score_item(item([HintJudgement(rounds=[2, 2, 2]), HintJudgement(has_reference=False)]))
    assert scored.vc == 50.0


def test_a_copy_for_any_hint_zeroes_the_items_vc():
    # hint 1 is fine (2, 2, 2); hint 2's reference was copied -> VC 0, whatever the VC rounds said
    assert score_item(item([HintJudgement(copied=False, rounds=[2, 2, 2]), HintJudgement(copied=True)])).vc == 0.0
    # the first copy decides even when a later check could not be asked or failed
    assert visual_consistency_mark([HintJudgement(copied=True), HintJudgement(copied=None)]) == 0
    assert visual_consistency_mark([HintJudgement(copied=PARSE), HintJudgement(copied=True)]) == PARSE


# -- the copy question ----------------------------------------------------------------------------


def test_copy_zero_means_a_copy_and_the_first_copy_stops_the_questions():
    assert "Give 0 if it is such a copy, 1 if" in copy_check_prompt()
    not_copy = {"copy": False}
    # hint 2 is asked only after hint 1's pixels and Copy answer both said "not a copy" (Copy: 1)
    assert copy_question_needed(not_copy, pixels0=not_copy, copy0=1)
    assert not copy_question_needed(not_copy, pixels0=not_copy, copy0=0)  # hint 1 was a copy: stop
    assert not copy_question_needed(not_copy, pixels0={"copy": True})  # an exact pixel copy: stop
    assert not copy_question_needed(not_copy, pixels0=not_copy, copy0=None)  # undecided: not asked
    assert not copy_question_needed({"copy": True})  # this hint's pixels already say copy
    assert no_copy_found(pixels0=not_copy, copy0=1, pixels1=not_copy, copy1=1)
    assert not no_copy_found(pixels0=not_copy, copy0=1, pixels1=not_copy, copy1=0)


# -- the reply parser -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "metric", "umni", "official"),
    [
        ("Rule Compliance: 1\nOn reflection, Rule Compliance: 2", "rc", 1, 1),  # the first match counts
        ("RuleCompliance: 2", "rc", 2, 2),  # no space between the label words
        ("visual consistency：0", "vc", 0, 0),  # any case, full-width colon
        ("Copy: 0", "copy", 0, 0),
    ],
)
def test_parser_reads_as_official(text, metric, umni, official):
    assert parse_judge_answer(text, metric) == umni
    assert official_reading(text, metric) == official


@pytest.mark.parametrize(
    ("text", "metric", "error", "official"),
    [
        ("Aesthetic Quality: 1.5", "aq", InvalidAnswer, 1),  # officially the digits before the point
        ("Rule Compliance: 3", "rc", InvalidAnswer, 3),  # officially 3 (150 after x50)
        ("Looks right to me.", "rc", ParseFailure, 0),  # officially 0
        ("**Rule Compliance:** 2", "rc", ParseFailure, 0),  # markdown between colon and digits: no match
    ],
)
def test_where_umni_asks_again_and_what_the_official_parser_reads(text, metric, error, official):
    with pytest.raises(error):
        parse_judge_answer(text, metric)
    assert official_reading(text, metric) == official


# -- aggregation ------------------------------------------------------------------------------------


def test_overall_counts_vc_as_zero_when_no_item_has_one():
    items = [GeniusItem(dimension="multi_semantic", id=i, vc_hints=0, rc=[2, 2, 2], aq=[1, 1, 1]) for i in range(2)]
    summary = summarize(items)
    # RC 100, AQ 50, no VC: 0.6*100 + 0.35*0 + 0.05*50 = 62.5 (cal_score.py's final_global_cons = 0)
    assert summary.vc.mean is None and summary.vc_counted_as_zero
    assert summary.overall == pytest.approx(62.5)


def test_official_equivalent_reads_the_kept_replies_by_the_official_rules():
    def call(value, text=None, status="done", failure=None):
        return {"status": status, "value": value, "text": text, "failure": failure,
                "official": official_reading(text, "rc") if text is not None else None}

    entry = {
        # round 3's reply had no label: umni re-asked and kept a failure; officially it reads 0
        "rc": [call(2, "Rule Compliance: 2"), call(2, "Rule Compliance: 2"),
               call(None, None, "failed", {"kind": "parse"}) | {"official": 0}],
        "aq": [call(1, "Aesthetic Quality: 1") | {"official": 1}] * 3,
        "vc": [],
    }
    shape = {"dimension": "multi_semantic", "id": "m", "vc_hints": 0, "vc_task": False}
    official = official_item(entry, shape)
    # official RC: round((2 + 2 + 0) / 3) = round(1.33) = 1 -> 50; umni: a counted parse failure
    assert score_item(official).rc == 50.0
    umni = GeniusItem(**shape, rc=[2, 2, PARSE], aq=[1, 1, 1])
    assert score_item(umni).rc == PARSE


# -- loader shapes the official code accepts ------------------------------------------------------


def _dimension(root: Path, records: list[dict], images: tuple[str, ...]) -> Path:
    folder = root / "visual_constraint"
    (folder / "images").mkdir(parents=True)
    (folder / "test_data.json").write_text(json.dumps(records), encoding="utf-8")
    for n, name in enumerate(images):
        Image.new("RGB", (16, 16), (40 * n, 90, 160)).save(folder / "images" / name)
    return folder


def test_loader_accepts_the_record_shapes_the_official_code_handles(tmp_path):
    base = {"context": "Keep <image:cat> in view.", "instruction": "Draw.", "rc_hint": "a cat on a mat"}
    records = [
        {**base, "id": "empty", "vc_hint": ""},  # no hint: no VC
        {**base, "id": "empty-list", "vc_hint": ["", "  "]},
        {**base, "id": "no-tag", "vc_hint": "keep the cat's stripes"},  # a hint naming no image
        {**base, "id": "both", "vc_hint": "", "VC_hint": "<image:cat> keep the cat"},  # vc_hint empty -> VC_hint
        {**base, "id": "upper", "VC_hint": ["<image:cat> keep the cat", "and its collar"]},
    ]
    _dimension(tmp_path, records, ("cat.png",))
    cases = {case.id: case for case in load_dimension(tmp_path, "visual_constraint")}
    assert cases["empty"].vc_hints == [] and not cases["empty"].has_vc
    assert cases["empty-list"].vc_hints == []
    assert [h.reference for h in cases["no-tag"].vc_hints] == [None] and not cases["no-tag"].has_vc
    assert cases["both"].vc_hints[0].reference.name == "cat" and cases["both"].has_vc
    assert [h.reference is not None for h in cases["upper"].vc_hints] == [True, False]

    result = evaluate(RunRequest(protocol="genius", cases=tmp_path, model="sim/umm", out=tmp_path / "run",
                                 cache=tmp_path / "cache", progress=False))
    records_out = {r["id"]: r for r in map(json.loads, (tmp_path / "run" / "results.jsonl").read_text().splitlines())}
    assert records_out["no-tag"]["scores"]["vc"] is None  # no hint names an image: VC does not apply
    assert records_out["upper"]["rounds"][0]["vc"][1]["reference"] is None  # counted 0 in each round
    assert result.summary.scores["official_equivalent"]["items"] == 5
