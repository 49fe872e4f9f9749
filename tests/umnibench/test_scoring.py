"""UmniBench scoring on hand-computed examples."""

import pytest

from umni_graphs.umnibench.cases import STAGE_QUESTIONS
from umni_graphs.umnibench.scoring import score

STAGE_OF = {q: s for s, qs in STAGE_QUESTIONS.items() for q in qs}


def record(domain, results):
    """results: Q-id -> True (right) / False (wrong) / None (failed)."""
    return {
        "domain": domain,
        "questions": {q: {"stage": STAGE_OF[q], "correct": results.get(q, True)} for q in STAGE_OF},
    }


def test_hand_computed_two_cases():
    # case A (Plant): all right except Q5 and Q9; case B (Animal): wrong Q1, Q5, Q8, Q9.
    a = record("Plant", {"Q5": False, "Q9": False})
    b = record("Animal", {"Q1": False, "Q5": False, "Q8": False, "Q9": False})
    s = score([a, b])
    assert s["questions"] == {
        "Q1": 50.0, "Q2": 100.0, "Q3": 100.0,
        "Q4": 100.0, "Q5": 0.0, "Q6": 100.0,
        "Q7": 100.0, "Q8": 50.0, "Q9": 0.0,
    }
    assert s["stages"]["generation"] == pytest.approx(83.3333, abs=1e-4)  # (50+100+100)/3
    assert s["stages"]["interaction"] == pytest.approx(66.6667, abs=1e-4)  # (100+0+100)/3
    assert s["stages"]["counterfactual"] == 50.0  # (100+50+0)/3
    assert s["overall"] == pytest.approx(66.6667, abs=1e-4)  # 12 of 18 right
    assert s["domains"] == {"Animal": pytest.approx(55.5556, abs=1e-4), "Plant": pytest.approx(77.7778, abs=1e-4)}


def test_failures_are_counted_apart_not_scored_as_wrong():
    a = record("Plant", {"Q1": None, "Q2": None, "Q3": None})
    b = record("Plant", {"Q1": False})
    s = score([a, b])
    assert s["questions"]["Q1"] == 0.0  # only b answered Q1, wrongly
    assert s["questions"]["Q2"] == 100.0
    assert s["failed"]["Q1"] == 1 and s["answered"]["Q1"] == 1
    assert s["domains"]["Plant"] == pytest.approx(100 * 14 / 15, abs=1e-4)


def test_question_nobody_answered_has_no_score():
    s = score([record("Plant", {"Q4": None})])
    assert s["questions"]["Q4"] is None
    assert s["stages"]["interaction"] == 100.0  # mean over the questions that have a score


def test_editing_only_omits_generation_stage():
    a = record("Office", {"Q1": False, "Q2": False, "Q7": False})
    s = score([a], ability="editing")
    assert s["stages"]["generation"] is None
    assert s["overall"] == pytest.approx(500 / 6, abs=1e-4)  # Q4..Q9: five of six right
    assert s["domains"]["Office"] == pytest.approx(500 / 6, abs=1e-4)
    assert s["questions"]["Q1"] == 0.0  # still shown per question
