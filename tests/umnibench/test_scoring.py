"""UmniBench scoring on hand-computed examples."""

import json
import random
from statistics import mean

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from umni.reporting.intervals import bootstrap_intervals
from umni.reporting.runset import Run
from umni.store.runfolder import RunFolder
from umni_graphs.umnibench.cases import STAGE_QUESTIONS
from umni_graphs.umnibench.protocol import PROTOCOL
from umni_graphs.umnibench.scoring import SCORED_STAGES, case_tallies
from umni_graphs.umnibench.summary import score, score_tallies

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


# -- tallies: the scores as a function of summed per-case counts (issue 27: the bootstrap re-scored
# -- every resample from its records, 300 times per run) ------------------------------------------

def reference(records, ability):
    """UmniBench's accuracies as the protocol states them, written plainly: per question over the
    answered ones; a stage the mean of its questions; overall the mean of the scored stages'
    questions; a domain pooled over its answered questions of scored stages."""
    def pct(values):
        return round(100.0 * sum(values) / len(values), 4) if values else None

    scored = SCORED_STAGES[ability]
    questions = {q: pct([r["questions"][q]["correct"] for r in records if r["questions"][q]["correct"] is not None])
                 for q in STAGE_OF}
    stages = {}
    for stage, qs in STAGE_QUESTIONS.items():
        values = [questions[q] for q in qs if questions[q] is not None]
        stages[stage] = round(mean(values), 4) if values and stage in scored else None
    included = [questions[q] for q in STAGE_OF if STAGE_OF[q] in scored and questions[q] is not None]
    asked = {}
    for r in records:
        for q, item in r["questions"].items():
            if STAGE_OF[q] in scored:
                asked.setdefault(r["domain"], []).append(item["correct"])
    return {
        "overall": round(mean(included), 4) if included else None,
        "stages": stages,
        "questions": questions,
        "domains": {d: pct([c for c in cs if c is not None]) for d, cs in sorted(asked.items())},
        "domain_failed": {d: sum(c is None for c in cs) for d, cs in sorted(asked.items())},
    }


outcome = st.sampled_from([True, False, None])
case = st.builds(
    lambda domain, results: record(domain, results),
    st.sampled_from(["Animal", "Plant", "Fluid/gas"]),
    st.dictionaries(st.sampled_from(sorted(STAGE_OF)), outcome),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(case, max_size=8), st.sampled_from(sorted(SCORED_STAGES)))
def test_scores_from_tallies_are_the_protocol_formula(records, ability):
    got = score(records, ability)
    want = reference(records, ability)
    for field, value in want.items():
        assert got[field] == value, field
    totals: dict[str, int] = {}
    for r in records:
        for key, n in case_tallies(r, ability).items():
            totals[key] = totals.get(key, 0) + n
    assert score_tallies(totals, ability) == got


def _write_run(path, records, ability):
    path.mkdir()
    (path / "summary.json").write_text(json.dumps({"protocol": "umnibench", "options": {"ability": ability}}))
    with (path / "results.jsonl").open("w") as out:
        for i, r in enumerate(records):
            out.write(json.dumps({"case_id": f"c{i}", **r}) + "\n")
    return Run(RunFolder(path).read_summary(), path)


@pytest.mark.parametrize("ability", ["full", "editing"])
def test_intervals_from_tallies_equal_intervals_from_resummarizing(tmp_path, monkeypatch, ability):
    """The matrix path draws the same resamples and scores them with the same formula: every
    interval is the one re-summarizing each resample's records gives."""
    rng = random.Random(7)
    records = [record(rng.choice(["Animal", "Plant", "Fluid/gas"]),
                      {q: rng.choice([True, True, False, None]) for q in STAGE_OF}) for _ in range(40)]
    run = _write_run(tmp_path / "run", records, ability)
    fast = bootstrap_intervals(run)
    monkeypatch.setattr(PROTOCOL, "tallies", lambda record, options: None)
    slow = bootstrap_intervals(run)
    assert fast == slow
    assert sum(v is not None for v in fast.values()) >= 20  # questions, stages, overall, domains
