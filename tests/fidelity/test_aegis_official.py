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
from hypothesis import given, settings
from hypothesis import strategies as st

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
    assert P.official_judgement(answers(token, "N"), 2).rows == (0.5,)


@pytest.mark.parametrize("token", ["Y.", "yEs", True, " Y", "YES!", "Yes, it is"])
def test_answers_the_official_scorer_reads_as_n_are_not_read_as_y(token):
    # Officially each of these is N: 1 Y of 2 items -> 0.5 (umni used to read them as Y -> 1.0).
    assert P.official_judgement(answers(token, "Y"), 2).rows == (0.5,)
    with pytest.raises(ParseFailure, match="answer 1"):
        P.parse_judge_reply(answers(token, "Y"), 2)


@pytest.mark.parametrize("token", ["N", "n", "no", "No", "NO"])
def test_the_n_strings_are_n(token):
    assert P.parse_judge_reply(answers("Y", token), 2).answers == (True, False)


def test_json_inside_prose_is_flagged_and_officially_unreadable():
    prose = 'My grading follows. {"answer_list": ["Y", "N"], "reason_list": ["a", "b"]} Hope it helps.'
    verdict = P.parse_judge_reply(prose, 2)
    assert verdict.answers == (True, False) and verdict.from_prose
    # officially unparsed: a copy marked failed (evaluation failure) and a row whose answer_list is the
    # text 'parsed_error' (12 characters: an evaluation failure for 2 items)
    assert P.official_judgement(prose, 2).rows == (None, None)
    whole = answers("Y", "N")
    assert not P.parse_judge_reply(whole, 2).from_prose and P.official_judgement(whole, 2).rows == (0.5,)
    fenced = "```json\n" + whole + "\n```"
    assert not P.parse_judge_reply(fenced, 2).from_prose and P.official_judgement(fenced, 2).rows == (0.5,)
    python_literal = "{'answer_list': ['Y', 'no'], 'reason_list': ['a', 'b']}"
    assert P.official_judgement(python_literal, 2).rows == (0.5,)  # what the official eval() reads, without eval


def test_wrong_length_is_officially_unreadable():
    assert P.official_judgement(answers("Y"), 2).rows == (None,)


# -- every reply shape the official pipeline takes (issue 25 item 20) ------------------------------
# eval/<task>.py strips the fence markers ```python, ```json and ``` wherever they are, reads the
# text with json.loads, else eval(); a dict gives answer_list = dict['answer_list'] (and needs a
# 'reason_list'), anything else the text 'parsed_error'. eval_score/<task>.py then needs
# len(answer_list) == checklist items and counts the members equal to Y/y/yes/Yes/YES.


def reply(answer_list: object, n: int | None = None) -> str:
    reasons = ["r"] * (n if n is not None else (len(answer_list) if hasattr(answer_list, "__len__") else 1))
    return json.dumps({"answer_list": answer_list, "reason_list": reasons})


@pytest.mark.parametrize(
    ("text", "n", "rows", "read_as"),
    [
        (reply("YNY"), 3, (2 / 3,), "str"),  # a string: character by character, Y and N -> 2 of 3
        (reply("yes"), 3, (1 / 3,), "str"),  # 'y', 'e', 's': only 'y' is a Y string
        (reply("YN"), 3, (None,), "str"),  # 2 characters for 3 items: an evaluation failure
        (reply({"Y": 1, "N": 0, "yes": 1}, 3), 3, (2 / 3,), "dict"),  # a dict: its keys
        ("{'answer_list': ('Y', 'N'), 'reason_list': []}", 2, (1 / 2,), "tuple"),  # a Python tuple
        ("{'answer_list': {'Y', 'N', 'Y'}, 'reason_list': []}", 2, (1 / 2,), "set"),  # a set: 2 members
        ("{'answer_list': ['Y', True], 'reason_list': []}", 2, (1 / 2,), "list"),  # Python True is no Y
        (reply(["Y", ["Y"], 1, None]), 4, (1 / 4,), "list"),  # only a Y string counts
        ("```python\n" + reply(["Y", "N"]) + "\n```", 2, (1 / 2,), "list"),
        ("Grades: ```json " + reply(["Y", "Y"]) + "```", 2, (None, None), "parsed_error"),  # prose stays
        ("```JSON\n" + reply(["Y", "Y"]) + "\n```", 2, (None, None), "parsed_error"),  # 'JSON' stays
        # a reply that is JSON but not an object is parsed, so no failure copy: only the 'parsed_error'
        # row, whose 12 characters match a 12-item checklist and score 0
        ('["Y", "N"]', 2, (None,), "parsed_error"),
        ('["Y", "N"]', 12, (0.0,), "parsed_error"),
        # nothing parses: the failure copy, then the 'parsed_error' row (0 for 12 items)
        ("I think Y, N, Y.", 12, (None, 0.0), "parsed_error"),
        ('{"answer_list": ["Y", true,], "reason_list": []}', 2, (None, None), "parsed_error"),  # eval: NameError
    ],
)
def test_the_official_reading_of_every_reply_shape(text, n, rows, read_as):
    read = P.official_judgement(text, n)
    assert read.stop is None and read.read_as == read_as
    assert read.rows == pytest.approx(rows)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (json.dumps({"answer_list": ["Y"]}), "reason_list"),  # eval/*.py: KeyError
        (json.dumps({"reason_list": ["r"]}), "answer_list"),
        (reply(3, 1), "len()"),  # eval_score/*.py: TypeError
        (reply(None, 1), "len()"),
        ("{'answer_list': ['Y'] * 2, 'reason_list': []}", "eval"),  # only running the reply would tell
    ],
)
def test_replies_the_official_scripts_stop_on_have_no_official_reading(text, says):
    read = P.official_judgement(text, 2)
    assert read.rows == () and says in read.stop


_PIECES = [
    '{"answer_list": ', "{'answer_list': ", '"reason_list": ["a", "b"]', "'reason_list': []", "[", "]", "(", ")",
    '"Y"', '"N"', "'y'", '"yes"', '"Y."', "True", "true", '"YN"', ", ", "}", "{", "```json\n", "```JSON\n",
    "```", "\n", "Sure: ", "null", "3", "*2",
]  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=12).map("".join))
def test_whenever_umni_scores_a_whole_reply_the_official_reading_is_the_same(text):
    """A reply umni scores from a whole JSON object is scored the same officially, unless a listed
    deviation applies: a fence tag other than python/json (the official reader leaves the tag), or a
    reply object without reason_list (the official scripts stop)."""
    try:
        verdict = P.parse_judge_reply(text, 2)
    except ParseFailure:
        return
    read = P.official_judgement(text, 2)
    if verdict.from_prose or read.stop is not None or "```JSON" in text:
        return
    assert read.rows == (sum(verdict.answers) / 2,) and read.read_as == "list"


def test_a_fence_tag_the_official_reader_leaves_is_counted_as_json_in_prose(understanding_cases, tmp_path):
    a = understanding_cases[0]
    text = "```JSON\n" + answers(*(["Y"] * len(a.checklist))) + "\n```"
    rec, _ = run_case(a, [text], tmp_path)
    assert rec["status"] == "scored" and rec["score"] == 1.0
    assert rec["official"]["read_as"] == "parsed_error"  # 'JSON' stays in front of the object: nothing parses
    listed = {d["id"]: d for d in PROTOCOL.summarize([rec], PROTOCOL.parse_options({}))["deviations"]}
    assert listed["json-in-prose"]["cases"] == 1 and listed["answer-list-shape"]["cases"] == 0


def test_a_string_answer_list_is_scored_officially_and_asked_again_by_umni():
    with pytest.raises(ParseFailure, match="must be a list"):
        P.parse_judge_reply(reply("YNY"), 3)


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
    assert rec_a["official"] == {"status": "scored", "score": pytest.approx((n_a - 1) / n_a), "read_as": "list"}
    assert rec_b["status"] == "evaluation_failure" and judge_b.judged == 1 + NO_RETRY.parse_retries
    assert rec_b["official"] == {"status": "scored", "score": pytest.approx((n_b - 1) / n_b), "read_as": "list"}
    assert rec_c["status"] == "scored" and rec_c["score"] == 1.0 and rec_c["judge_from_prose"]
    # officially unparsed: a copy marked failed, and the 'parsed_error' row (n_c is not 12): two failures
    assert n_c != 12
    assert rec_c["official"] == {"status": "evaluation_failure", "score": None, "read_as": "parsed_error", "failure_copies": 1}

    summary = PROTOCOL.summarize([rec_a, rec_b, rec_c], PROTOCOL.parse_options({}))
    umni = ((n_a - 1) / n_a + 1.0) / 2
    official = ((n_a - 1) / n_a + (n_b - 1) / n_b) / 2
    assert summary["overall"] == pytest.approx(round(100 * umni, 2))
    assert summary["official_equivalent"]["overall"] == pytest.approx(round(100 * official, 2))
    # rows as the official scorer counts them: case c twice (len(eval_failed_list) is 2)
    assert summary["official_equivalent"]["cases"] == {"scored": 2, "inference_failures": 0, "evaluation_failures": 2}
    listed = {d["id"]: d for d in summary["deviations"]}
    assert listed["yn-exact"]["cases"] == 1 and listed["json-in-prose"]["cases"] == 1
    assert listed["yn-exact"]["official_score"] == summary["official_equivalent"]["overall"]
    assert listed["yn-exact"]["umni_score"] == summary["overall"]


def test_official_figure_counts_string_answers_and_the_parsed_error_row(understanding_cases, tmp_path):
    # Issue 25 item 20, end to end. a: the judge answers answer_list as one string, all Y but the last
    # item: umni re-asks, then an evaluation failure; officially (n_a - 1) / n_a. b: a 12-item copy of
    # a case and a reply that does not parse: umni an evaluation failure; officially a failure row and
    # a 0 (the text 'parsed_error' has 12 characters, none of them Y).
    a = understanding_cases[0]
    b = understanding_cases[1].model_copy(update={"id": 9002, "refined_question": (understanding_cases[1].checklist * 12)[:12]})
    n_a = len(a.checklist)
    rec_a, _ = run_case(a, [reply("Y" * (n_a - 1) + "N", n_a)], tmp_path)
    rec_b, _ = run_case(b, ["I would say yes to all of them."], tmp_path)
    assert rec_a["status"] == rec_b["status"] == "evaluation_failure"
    assert rec_a["official"]["status"] == "scored" and rec_a["official"]["score"] == pytest.approx((n_a - 1) / n_a)
    assert rec_b["official"] == {"status": "scored", "score": 0.0, "read_as": "parsed_error", "failure_copies": 1}
    summary = PROTOCOL.summarize([rec_a, rec_b], PROTOCOL.parse_options({}))
    official = summary["official_equivalent"]
    assert official["overall"] == pytest.approx(round(100 * ((n_a - 1) / n_a + 0.0) / 2, 2))
    assert official["cases"] == {"scored": 2, "inference_failures": 0, "evaluation_failures": 1}
    assert official["stops"] == 0 and summary["overall"] is None
    listed = {d["id"]: d for d in summary["deviations"]}
    assert listed["answer-list-shape"]["cases"] == 2 and listed["answer-list-shape"]["changes_score"]


def test_a_reply_the_official_scripts_stop_on_is_counted_apart(understanding_cases, tmp_path):
    a = understanding_cases[0]
    rec, _ = run_case(a, [json.dumps({"answer_list": ["Y"] * len(a.checklist)})], tmp_path)  # no reason_list
    assert rec["status"] == "scored" and rec["official"]["status"] == "evaluation_failure"
    assert "reason_list" in rec["official"]["stop"]
    official = PROTOCOL.summarize([rec], PROTOCOL.parse_options({}))["official_equivalent"]
    assert official["stops"] == 1 and official["overall"] is None


def test_task_by_category_table(understanding_cases, tmp_path):
    cases = [*understanding_cases[:2], understanding_cases[0].model_copy(update={"id": 9001})]
    records = [run_case(case, [answers(*(["Y"] * len(case.checklist)))], tmp_path)[0] for case in cases]
    table = PROTOCOL.summarize(records, PROTOCOL.parse_options({}))["by_task_and_category"]
    categories = {case.category for case in cases}
    assert set(table) == {"understanding"} and set(table["understanding"]) == categories
    for category in categories:
        n = sum(case.category == category for case in cases)
        assert table["understanding"][category] == {"score": 100.0, "std": 0.0, "scored": n, "inference_failures": 0, "evaluation_failures": 0}
