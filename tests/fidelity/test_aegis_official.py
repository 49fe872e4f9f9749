"""AEGIS scores against the semantics of the official scorer (DongSky/AEGIS, ``eval_score/*.py``).

Official rules restated: an answer is Y only when it is exactly ``Y``, ``y``, ``yes``, ``Yes`` or
``YES``; anything else in the list counts as N; the reply is read whole as one JSON object (or Python
literal). umni asks again on out-of-format answers and reads JSON out of prose; both are listed
deviations, and the summary's ``official_equivalent`` re-reads every reply by the official rules.
Expected numbers are worked out by hand in the comments.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import anyio
import pytest

from umni.backends.bindings import Bindings
from umni.backends.contract import Backend
from umni.backends.roles import MODEL_ROLES, TextReply
from umni.engine.runner import RetryPolicy, Runner
from umni.store.cache import Cache
from umni.util.errors import ParseFailure
from umni.util.spec import Spec
from umni_cases import bundled
from umni_graphs.aegis import PROTOCOL
from umni_graphs.aegis import prompts as P

NO_RETRY = RetryPolicy(max_attempts=1, initial_wait=0, max_wait=0, jitter=0)


class JudgeReplies(Backend):
    """Understands with a fixed sentence; answers every judge prompt with the next scripted reply
    (the last one repeats)."""

    provider = "aegis-replies"
    roles = frozenset(MODEL_ROLES)

    def __init__(self, replies: Sequence[str]) -> None:
        super().__init__(Spec(provider="aegis-replies", name="t"))
        self.replies = list(replies)
        self.judged = 0

    async def respond(self, parts, *, max_tokens: int = 512, seed: int = 0) -> TextReply:
        text = "\n".join(p for p in parts if isinstance(p, str))
        if "answer_list" not in text:
            return TextReply("It is five.")
        reply = self.replies[min(self.judged, len(self.replies) - 1)]
        self.judged += 1
        return TextReply(reply)


@pytest.fixture(scope="module")
def understanding_cases():
    loaded = PROTOCOL.load(bundled("aegis") / "annotation.json", PROTOCOL.parse_options({}))
    return [c for c in loaded.cases if c.task == "understanding"]


def run_case(case, replies: Sequence[str], tmp_path) -> tuple[dict, JudgeReplies]:
    backend = JudgeReplies(replies)
    cache = Cache(tmp_path / f"cache-{case.id}")
    try:
        runner = Runner(Bindings({role: backend for role in MODEL_ROLES}), cache, retry=NO_RETRY)
        outcomes = anyio.run(runner.run_graph, PROTOCOL.build(case, PROTOCOL.parse_options({})))
    finally:
        cache.close()
    return PROTOCOL.record(case, outcomes, PROTOCOL.parse_options({})), backend


def answers(*tokens: object) -> str:
    return json.dumps({"answer_list": list(tokens), "reason_list": ["r"] * len(tokens)})


# -- the Y/N reading ------------------------------------------------------------------------------


@pytest.mark.parametrize("token", ["Y", "y", "yes", "Yes", "YES"])
def test_the_official_yes_strings_are_yes(token):
    assert P.parse_judge_reply(answers(token, "N"), 2).answers == (True, False)
    assert P.official_answers(answers(token, "N"), 2) == (True, False)


@pytest.mark.parametrize("token", ["Y.", "yEs", True, " Y", "YES!", "Yes, it is"])
def test_answers_the_official_scorer_reads_as_n_are_not_read_as_y(token):
    # Officially each of these is N: 1 Y of 2 items -> 0.5 (umni used to read them as Y -> 1.0).
    assert P.official_answers(answers(token, "Y"), 2) == (False, True)
    with pytest.raises(ParseFailure, match="answer 1"):
        P.parse_judge_reply(answers(token, "Y"), 2)


@pytest.mark.parametrize("token", ["N", "n", "no", "No", "NO"])
def test_the_n_strings_are_n(token):
    assert P.parse_judge_reply(answers("Y", token), 2).answers == (True, False)


def test_json_inside_prose_is_flagged_and_officially_unreadable():
    prose = 'My grading follows. {"answer_list": ["Y", "N"], "reason_list": ["a", "b"]} Hope it helps.'
    verdict = P.parse_judge_reply(prose, 2)
    assert verdict.answers == (True, False) and verdict.from_prose
    assert P.official_answers(prose, 2) is None  # officially: no answer_list -> evaluation failure
    whole = answers("Y", "N")
    assert not P.parse_judge_reply(whole, 2).from_prose and P.official_answers(whole, 2) == (True, False)
    fenced = "```json\n" + whole + "\n```"
    assert not P.parse_judge_reply(fenced, 2).from_prose and P.official_answers(fenced, 2) == (True, False)
    python_literal = "{'answer_list': ['Y', 'no']}"
    assert P.official_answers(python_literal, 2) == (True, False)  # what the official eval() reads, without eval


def test_wrong_length_is_officially_unreadable():
    assert P.official_answers(answers("Y"), 2) is None


# -- cases and the summary ------------------------------------------------------------------------


def test_official_figure_beside_umni_on_hand_computed_cases(understanding_cases, tmp_path):
    a, b = understanding_cases[:2]
    c = a.model_copy(update={"id": 9001})  # a third case (the bundled set has two understanding cases)
    n_a, n_b, n_c = len(a.checklist), len(b.checklist), len(c.checklist)
    # a: a clean reply, all Y but the last item -> umni and official both (n_a - 1) / n_a.
    rec_a, _ = run_case(a, [answers(*(["Y"] * (n_a - 1) + ["N"]))], tmp_path)
    # b: the judge insists on "Y." for item 1 (others Y): umni re-asks, then an evaluation failure;
    #    officially the case is scored with item 1 as N -> (n_b - 1) / n_b.
    rec_b, judge_b = run_case(b, [answers(*(["Y."] + ["Y"] * (n_b - 1)))], tmp_path)
    # c: all Y, but wrapped in prose: umni scores 1.0; officially an evaluation failure.
    rec_c, _ = run_case(c, ["Sure. " + answers(*(["Y"] * n_c)) + " Done."], tmp_path)

    assert rec_a["status"] == "scored" and rec_a["score"] == pytest.approx((n_a - 1) / n_a)
    assert rec_a["official"] == {"status": "scored", "score": pytest.approx((n_a - 1) / n_a)}
    assert rec_b["status"] == "evaluation_failure" and judge_b.judged == 1 + NO_RETRY.parse_retries
    assert rec_b["official"] == {"status": "scored", "score": pytest.approx((n_b - 1) / n_b)}
    assert rec_c["status"] == "scored" and rec_c["score"] == 1.0 and rec_c["judge_from_prose"]
    assert rec_c["official"] == {"status": "evaluation_failure", "score": None}

    summary = PROTOCOL.summarize([rec_a, rec_b, rec_c], PROTOCOL.parse_options({}))
    umni = ((n_a - 1) / n_a + 1.0) / 2
    official = ((n_a - 1) / n_a + (n_b - 1) / n_b) / 2
    assert summary["overall"] == pytest.approx(round(100 * umni, 2))
    assert summary["official_equivalent"]["overall"] == pytest.approx(round(100 * official, 2))
    assert summary["official_equivalent"]["cases"] == {"scored": 2, "inference_failures": 0, "evaluation_failures": 1}
    listed = {d["id"]: d for d in summary["deviations"]}
    assert listed["yn-exact"]["cases"] == 1 and listed["json-in-prose"]["cases"] == 1
    assert listed["yn-exact"]["official_score"] == summary["official_equivalent"]["overall"]
    assert listed["yn-exact"]["umni_score"] == summary["overall"]


def test_task_by_category_table(understanding_cases, tmp_path):
    cases = [*understanding_cases[:2], understanding_cases[0].model_copy(update={"id": 9001})]
    records = [run_case(case, [answers(*(["Y"] * len(case.checklist)))], tmp_path)[0] for case in cases]
    table = PROTOCOL.summarize(records, PROTOCOL.parse_options({}))["by_task_and_category"]
    categories = {case.category for case in cases}
    assert set(table) == {"understanding"} and set(table["understanding"]) == categories
    for category in categories:
        n = sum(case.category == category for case in cases)
        assert table["understanding"][category] == {"score": 100.0, "std": 0.0, "scored": n, "inference_failures": 0, "evaluation_failures": 0}
