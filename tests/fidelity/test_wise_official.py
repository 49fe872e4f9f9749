"""WISE against the semantics of the official code (PKU-YuanGroup/WISE: ``vllm_eval.py``,
``WISE_legacy/gpt_eval.py``, ``calculate_verified.py``, ``WISE_legacy/Calculate.py``).

The official rules, restated:

* verified judge: ``<think>…</think>`` blocks are removed (and a lone closing tag) before reading;
  the FIRST ``Score`` label (optionally bold, an ASCII colon or none) followed by 0 or 1 gives the
  score; with no such label, a reply holding exactly one line that is a bare 0 or 1 gives it.
* legacy judge: each of Consistency / Realism / Aesthetic Quality is read from its label (bold
  allowed around the label, ASCII colon or none, then one digit), the last occurrence winning; with
  no label at all, the first three lines that are a bare 0, 1 or 2 are C, R, A.
* legacy WiScore is ``(0.7*C + 0.2*R + 0.1*A) / 2`` in floating point, a category is
  ``sum(scores) / len(scores)`` in prompt-id order, the Overall ``0.4*culture + 0.167*time + …``
  left to right — so values at a rounding edge round as the official script's floats do.
* judge requests: a system message, temperature 0; the verified script turns thinking off through
  the server's ``chat_template_kwargs``; text first, then the image.

Expected numbers are worked out by hand in the comments.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.openai_server import ChatRequest, OpenAIStubServer
from tests.support.shared_data import shared_data
from umni.cli import main
from umni.store.runfolder import RunFolder, Summary
from umni.util.errors import InputError, InvalidAnswer, ParseFailure
from umni_cases import bundled
from umni_graphs.wise import PROTOCOL, WiseOptions
from umni_graphs.wise.prompts import (
    LegacyScores,
    official_legacy_reading,
    official_strip_think,
    official_verified_reading,
    parse_legacy_answer,
    parse_verified_answer,
    strip_think,
)
from umni_graphs.wise.scoring import LegacyJudgement, summarize_legacy, wiscore


def options(**values: str) -> WiseOptions:
    opts = PROTOCOL.parse_options(dict(values))
    assert isinstance(opts, WiseOptions)
    return opts


# ------------------------------------------------------------------------------ verified parser


@pytest.mark.parametrize(
    ("reply", "score"),
    [
        ("Score: 0\nOn reflection, Score: 1", 0),  # the first label counts
        ("**Score**: 1", 1),  # bold around the label
        ("score 0", 0),  # case-insensitive, colon optional
        ("1", 1),  # a bare digit line
        ("The image is right.\n 0 \n", 0),  # exactly one bare 0/1 line among prose
        ("<think>It shows mooncakes, so Score: 1 ... no, wrong shape.</think>\n0", 0),  # think block dropped
        ("<think>draft Score: 0</think>\n\nScore: 1", 1),
        ("Score: 1.0", 1),  # the official digit is 1; umni's whole number 1.0 is the same mark
        ("Score: \uff11\nScore: 0", 0),  # a full-width 1 is no ASCII 0/1: the label is passed over
    ],
)
def test_verified_reads_as_official(reply: str, score: int) -> None:
    assert parse_verified_answer(reply) == score
    assert official_verified_reading(reply) == score


@pytest.mark.parametrize(
    "reply",
    [
        "Score：1",  # a full-width colon is outside the official colon class, and no bare line
        "**Score:** 1",  # bold closing after the colon: the official label pattern does not reach the digit
        "1\n0",  # two bare lines: the official fallback needs exactly one
        "Score: <0-1>",
        "Yes, it is correct.",
        "Score: \uff11",  # issue 25 item 19: a full-width 1; the official [01] is ASCII, so nothing reads
        "Score: \u0661",  # an Arabic-Indic 1, the same
        "\uff10",  # nor is a bare full-width 0 line a bare 0/1 line
    ],
)
def test_verified_unreadable_as_official(reply: str) -> None:
    assert official_verified_reading(reply) is None
    with pytest.raises(ParseFailure):
        parse_verified_answer(reply)


def test_verified_lone_closing_think_tag_is_a_listed_deviation() -> None:
    # The template opened <think>, so the reply holds only its end. Official: the tag alone is removed,
    # the reasoning stays, its first "Score: 0" counts. umni: everything up to the tag is reasoning.
    reply = "The cake looks flat; Score: 0 at first sight, but it is a mooncake.</think>\n\nScore: 1"
    assert official_verified_reading(reply) == 0
    assert parse_verified_answer(reply) == 1


@pytest.mark.parametrize(
    ("reply", "official"), [("Score: 1.5", 1), ("Score: 10\nScore: 1", 1), ("Score: 2", None), ("Score: 01", None)]
)
def test_verified_whole_numbers_off_the_scale_are_asked_again(reply: str, official: int | None) -> None:
    # Official reads one digit (1.5 -> 1) or passes over a label whose number is not 0/1 ("Score: 10"
    # -> the later "Score: 1"); umni reads the whole number at the first label and refuses it.
    assert official_verified_reading(reply) == official
    with pytest.raises(InvalidAnswer):
        parse_verified_answer(reply)


# ------------------------------------------------------------------------------ legacy parser


@pytest.mark.parametrize(
    ("reply", "marks"),
    [
        ("Consistency: 2\nRealism: 1\nAesthetic Quality: 0", (2, 1, 0)),
        ("**Consistency**: 1\n**Realism** 2\n**aesthetic quality**: 1", (1, 2, 1)),
        ("Consistency: 1\nRealism: 1\nAesthetic Quality: 1\nOn reflection, Consistency: 0", (0, 1, 1)),  # last wins
        ("Here are my marks:\n2\n1\n0", (2, 1, 0)),  # bare lines among prose
        ("2\n1\n0\n1", (2, 1, 0)),  # the first three bare lines
        ("Consistency: 2a\nRealism: 1\nAesthetic Quality: 0", (2, 1, 0)),  # the digit, whatever follows
        # the legacy pattern's \d takes any Unicode digit and float() reads it: full-width marks count
        ("Consistency: \uff12\nRealism: \uff11\nAesthetic Quality: \uff10", (2, 1, 0)),
    ],
)
def test_legacy_reads_as_official(reply: str, marks: tuple[int, int, int]) -> None:
    assert parse_legacy_answer(reply) == LegacyScores(*marks)
    assert official_legacy_reading(reply) == dict(
        zip(("consistency", "realism", "aesthetic_quality"), map(float, marks))
    )


@pytest.mark.parametrize(
    "reply",
    [
        "Consistency：2\nRealism：1\nAesthetic Quality：0",  # full-width colons: no label reads
        "**Consistency:** 2\n**Realism:** 1\n**Aesthetic Quality:** 0",  # bold closing after the colon
        "Consistency: 2\nRealism: 1",  # a mark missing
        "2\n1",
    ],
)
def test_legacy_unreadable_as_official(reply: str) -> None:
    assert official_legacy_reading(reply) is None
    with pytest.raises(ParseFailure):
        parse_legacy_answer(reply)


def test_legacy_marks_off_the_scale_are_asked_again_where_official_scores_them() -> None:
    reply = "Consistency: 5\nRealism: 10\nAesthetic Quality: 1"
    assert official_legacy_reading(reply) == {"consistency": 5.0, "realism": 1.0, "aesthetic_quality": 1.0}
    with pytest.raises(InvalidAnswer):
        parse_legacy_answer(reply)


def test_a_legacy_mark_with_a_leading_zero_in_any_script_is_asked_again() -> None:
    # "01" is no mark (official: one digit, 0); the full-width "\uff10\uff11" is the same number and
    # must not be read as 1 (int() would): officially 0.0, umni asks again.
    for zero_one in ("01", "\uff10\uff11"):
        reply = f"Consistency: {zero_one}\nRealism: 1\nAesthetic Quality: 1"
        assert official_legacy_reading(reply) == {"consistency": 0.0, "realism": 1.0, "aesthetic_quality": 1.0}
        with pytest.raises(InvalidAnswer):
            parse_legacy_answer(reply)


_FRAGMENTS = [
    "Score", "**Score**", "score", "Consistency", "**Realism**", "Realism", "Aesthetic Quality", "aesthetic quality",
    ":", "：", " ", "  ", "\n", "0", "1", "2", "5", "10", "1.5", "2.0", "<think>", "</think>", "**", "yes", "a",
    "*", "Score:", "\n1\n", "\n2\n", "01", "\uff11", "\uff10", "\uff12", "\u0661",
]  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_FRAGMENTS), max_size=14).map("".join))
def test_whenever_umni_scores_a_reply_the_official_script_reads_the_same(reply: str) -> None:
    """umni's readings only add refusals to the official ones: a reply umni scores is scored the same
    officially (apart from the listed lone-</think> deviation)."""
    if strip_think(reply) == official_strip_think(reply):
        try:
            score = parse_verified_answer(reply)
        except (ParseFailure, InvalidAnswer):
            pass
        else:
            assert official_verified_reading(reply) == score
    try:
        marks = parse_legacy_answer(reply)
    except (ParseFailure, InvalidAnswer):
        return
    assert official_legacy_reading(reply) == dict(
        zip(("consistency", "realism", "aesthetic_quality"), map(float, marks))
    )


# ------------------------------------------------------------------------------ legacy arithmetic


def test_wiscore_in_the_official_operation_order() -> None:
    # (0.7 + 0.2 + 0.1) / 2 is 0.49999999999999994 in floating point, as the official script computes it.
    assert wiscore(1, 1, 1) == (0.7 * 1 + 0.2 * 1 + 0.1 * 1) / 2 == 0.49999999999999994


def test_a_category_mean_at_a_rounding_edge_rounds_as_official() -> None:
    # Eight culture prompts; WiScores 0.5, 0.4, 0.2, 0.8, 0.8, 0.7, 0.15, 1.0: exact mean 4.65/8 = 0.58125.
    # Summed in id order in floating point, the official mean is 0.5812499999999999 -> 0.5812 at 4
    # decimals (a mean computed exactly, 0.58125, rounds to 0.5813).
    marks = [(1, 1, 2), (1, 0, 1), (0, 2, 0), (2, 1, 1), (2, 1, 1), (1, 2, 2), (0, 1, 1), (2, 2, 2)]
    judgements = [
        LegacyJudgement(prompt_id=i + 1, consistency=c, realism=r, aesthetic_quality=a)
        for i, (c, r, a) in enumerate(marks)
    ]
    summary = summarize_legacy(judgements, expected=range(1, 9))
    assert summary.categories["culture"].mean == 0.5812499999999999
    assert round(summary.categories["culture"].mean, 4) == 0.5812


def test_the_overall_at_a_rounding_edge_rounds_as_official() -> None:
    # One prompt per legacy category: culture (2,0,0) 0.7, time (1,1,1) 0.5, space (0,2,1) 0.25,
    # biology (2,2,2) 1.0, physics (0,0,2) 0.1, chemistry (2,1,0) 0.8.
    # Exactly: 0.28 + 0.0835 + 0.03325 + 0.1 + 0.01 + 0.08 = 0.58675; the official left-to-right float
    # sum is 0.5867499999999999, which rounds to 0.5867 (the exact value would give 0.5868).
    rows = {1: (2, 0, 0), 401: (1, 1, 1), 568: (0, 2, 1), 701: (2, 2, 2), 801: (0, 0, 2), 901: (2, 1, 0)}
    judgements = [
        LegacyJudgement(prompt_id=i, consistency=c, realism=r, aesthetic_quality=a) for i, (c, r, a) in rows.items()
    ]
    summary = summarize_legacy(judgements, expected=list(rows))
    assert summary.overall == 0.5867499999999999
    assert round(summary.overall, 4) == 0.5867


# ------------------------------------------------------------------------------ layouts and sets


def _repository_layout(root: Path) -> Path:
    """The published repository: data_verified/ and WISE_legacy/data/ (bundled samples as content)."""
    shutil.copytree(bundled("wise") / "verified", root / "data_verified")
    shutil.copytree(bundled("wise") / "legacy", root / "WISE_legacy" / "data")
    return root


def test_the_published_repository_layout_is_accepted_as_cases(tmp_path: Path) -> None:
    root = _repository_layout(tmp_path / "WISE")
    verified = PROTOCOL.load(root, options())
    legacy = PROTOCOL.load(root, options(scoring="legacy"))
    assert verified.path == root / "data_verified" and legacy.path == root / "WISE_legacy" / "data"
    assert [c.prompt.prompt_id for c in verified.cases][:4] == [1, 2, 3, 401]
    assert {c.set for c in legacy.cases} == {"legacy"} and len(legacy.cases) == 18
    # the WISE_legacy folder itself is accepted too
    assert PROTOCOL.load(root / "WISE_legacy", options(set="legacy")).path == root / "WISE_legacy" / "data"


def test_a_legacy_file_without_set_legacy_is_refused(tmp_path: Path) -> None:
    legacy_file = bundled("wise") / "legacy" / "spatio-temporal_reasoning.json"
    with pytest.raises(InputError, match="set=legacy"):
        PROTOCOL.load(legacy_file, options())
    with pytest.raises(InputError, match="set=legacy"):
        PROTOCOL.load(bundled("wise") / "legacy", options())
    # renamed, it is still recognised by its Category labels against the two sets' id ranges
    renamed = tmp_path / "my_prompts.json"
    records = json.loads(shared_data("wise", "legacy", "spatio-temporal_reasoning.json").read_text())
    renamed.write_text(json.dumps(records))
    with pytest.raises(InputError, match="set=legacy"):
        PROTOCOL.load(renamed, options())
    assert len(PROTOCOL.load(renamed, options(set="legacy")).cases) == len(records)


def test_cases_check_takes_options(capsys: pytest.CaptureFixture[str]) -> None:
    legacy = shared_data("wise", "legacy")
    assert main(["cases", "check", "wise", str(legacy), "--option", "set=legacy"]) == 0
    assert "1000 cases valid" in capsys.readouterr().out
    assert main(["cases", "check", "wise", str(legacy)]) == 2  # the legacy set read as verified: refused


def test_cases_check_takes_the_path_after_its_options(capsys: pytest.CaptureFixture[str]) -> None:
    # argparse fills both positionals (protocol, optional path) at "wise", so a PATH after --option is
    # left over: "unrecognized arguments"
    legacy = shared_data("wise", "legacy")
    try:
        code = main(["cases", "check", "wise", "--option", "set=legacy", str(legacy)])
    except SystemExit as exc:  # argparse's error exit
        code = exc.code
    assert code == 0 and "1000 cases valid" in capsys.readouterr().out


# ------------------------------------------------------------------------------ runs against a judge server


def _judge_server(replies: dict[str, str]) -> OpenAIStubServer:
    """A real loopback server answering each judge prompt by the WISE prompt it quotes."""

    def reply(chat: ChatRequest) -> str:
        text = "\n".join(chat.texts)
        hits = [answer for prompt, answer in replies.items() if f'"{prompt}"' in text]
        return hits[0] if len(hits) == 1 else "no idea"

    return OpenAIStubServer(responder=reply)


def _run(tmp_path: Path, server: OpenAIStubServer, cases: Path, *extra: str) -> Summary:
    out = tmp_path / "run"
    code = main([
        "run", "wise", "--cases", str(cases), "--role", "generate=sim/umm",
        "--role", f"judge=openai/judge-vlm?base_url={server.base_url}", "--out", str(out),
        "--cache", str(tmp_path / "cache"), "--quiet", "--max-attempts", "1", *extra,
    ])  # fmt: skip
    assert code == 0
    return RunFolder(out).read_summary()


def test_judge_requests_are_sent_as_official(tmp_path: Path) -> None:
    with _judge_server({}) as server:
        _run(tmp_path / "v", server, bundled("wise") / "verified", "--limit", "1")
        verified = server.last("/chat/completions").json
        _run(tmp_path / "l", server, bundled("wise") / "legacy", "--limit", "1", "--option", "scoring=legacy")
        legacy = server.last("/chat/completions").json
    for body, limit in ((verified, 500), (legacy, 2000)):
        system, user = body["messages"]
        assert system["role"] == "system" and system["content"].strip()
        assert [part["type"] for part in user["content"]] == ["text", "image_url"]  # text first, then the image
        assert (body["temperature"], body["max_tokens"]) == (0.0, limit)
    assert verified["chat_template_kwargs"] == {"enable_thinking": False}
    assert "chat_template_kwargs" not in legacy  # the legacy script called a hosted API without it


def test_official_equivalent_and_deviations_in_the_summary(tmp_path: Path) -> None:
    cases = PROTOCOL.load(bundled("wise") / "verified", options()).cases
    by_id = {c.prompt.prompt_id: c.prompt.Prompt for c in cases}
    # 18 bundled prompts, three per category. All "Score: 1" except: prompt 1 "Score: 1.5" (official
    # reads 1; umni asks again, three times, then counts an invalid failure), prompt 2 "Score: 0",
    # prompt 401 a lone </think> after a draft "Score: 0" (official 0, umni 1).
    replies = dict.fromkeys(by_id.values(), "Score: 1")
    replies[by_id[1]] = "Score: 1.5"
    replies[by_id[2]] = "Score: 0"
    replies[by_id[401]] = "Draft: Score: 0, but the clock is right.</think>\nScore: 1"
    with _judge_server(replies) as server:
        summary = _run(tmp_path, server, bundled("wise") / "verified")
    scores = summary.scores
    # umni: culture {2: 0, 3: 1} -> 0.5 (prompt 1 failed); time 1.0; the rest 1.0.
    # Overall = 0.4*0.5 + 0.12*5*1.0 = 0.8
    assert (scores["culture"], scores["time"], scores["overall"]) == (0.5, 1.0, 0.8)
    assert scores["failures"] == {"invalid": 1}
    # official: culture {1: 1, 2: 0, 3: 1} -> 2/3; time {401: 0, 402: 1, 403: 1} -> 2/3.
    # Overall = 0.4*2/3 + 0.12*2/3 + 0.12*4 = 0.26667 + 0.08 + 0.48 = 0.8267 (4 decimals)
    official = scores["official_equivalent"]
    assert (official["culture"], official["time"], official["overall"]) == (0.6667, 0.6667, 0.8267)
    assert official["scored"] == 18
    assert official["official_script_gives_overall"] is False  # 982 of the 1000 ids have no score
    deviations = {d["id"]: d for d in scores["deviations"]}
    assert deviations["whole-number-marks"]["cases"] == 1
    assert deviations["think-prefix"]["cases"] == 1
    assert deviations["whole-number-marks"]["official_score"] == 0.8267
    assert deviations["whole-number-marks"]["umni_score"] == 0.8
    assert {"failures-counted", "judge-wording"} <= set(deviations)


def test_a_full_width_score_is_a_counted_parse_failure_never_a_mark(tmp_path: Path) -> None:
    # Issue 25 item 19: 'Score: \uff11' was read as 1. Officially nothing reads (ASCII [01]); umni asks
    # again, then counts a parse failure for that prompt: culture {1: failed, 2: 1, 3: 1} -> 1.0.
    cases = PROTOCOL.load(bundled("wise") / "verified", options()).cases
    by_id = {c.prompt.prompt_id: c.prompt.Prompt for c in cases}
    replies = dict.fromkeys(by_id.values(), "Score: 1")
    replies[by_id[1]] = "Score: \uff11"
    with _judge_server(replies) as server:
        summary = _run(tmp_path, server, bundled("wise") / "verified")
    scores = summary.scores
    assert scores["failures"] == {"parse": 1} and scores["culture"] == 1.0
    assert scores["official_equivalent"]["scored"] == 17  # the official reading gives up on it too


def test_real_files_run_unchanged(tmp_path: Path) -> None:
    with _judge_server({}) as server:  # every reply unreadable: still a complete run, failures counted
        verified = _run(tmp_path / "v", server, shared_data("wise", "verified"), "--limit", "2")
        legacy = _run(tmp_path / "l", server, shared_data("wise", "legacy"), "--limit", "2", "--option", "set=legacy")
    assert verified.counts.cases == 2 and verified.scores["set"] == "verified"
    assert legacy.counts.cases == 2 and legacy.scores["set"] == "legacy"
    assert verified.scores["failures"] == {"parse": 2} == legacy.scores["failures"]
    assert re.search(r"998 of the 1000", verified.scores["coverage"])


def test_a_judge_template_file_replaces_umnis_wording(tmp_path: Path) -> None:
    template = tmp_path / "judge.yaml"
    template.write_text(
        'system: "Grade as the paper did."\n'
        'user: "Paper protocol.\\nPROMPT: \\"{prompt}\\"\\nEXPLANATION: \\"{explanation}\\"\\nReturn Score: 0 or 1."\n'
    )
    case = PROTOCOL.load(bundled("wise") / "verified", options()).cases[0].prompt
    with _judge_server({case.Prompt: "Score: 1"}) as server:
        summary = _run(
            tmp_path, server, bundled("wise") / "verified", "--limit", "1", "--option", f"judge_prompt={template}"
        )
        sent = server.last("/chat/completions").json
    system, user = sent["messages"]
    assert system == {"role": "system", "content": "Grade as the paper did."}
    assert user["content"][0]["text"] == (
        f'Paper protocol.\nPROMPT: "{case.Prompt}"\nEXPLANATION: "{case.Explanation}"\nReturn Score: 0 or 1.'
    )
    assert summary.scores["culture"] == 1.0
    wording = next(d for d in summary.scores["deviations"] if d["id"] == "judge-wording")
    assert wording["changes_score"] is False and str(template) in wording["umni"]


def test_a_bad_judge_template_is_refused_before_any_work(tmp_path: Path) -> None:
    template = tmp_path / "judge.yaml"
    template.write_text("user: no placeholders here\n")
    code = main(["run", "wise", "--model", "sim/umm", "--out", str(tmp_path / "run"), "--cache", str(tmp_path / "c"),
                 "--quiet", "--option", f"judge_prompt={template}"])  # fmt: skip
    assert code == 2 and not (tmp_path / "run" / "summary.json").exists()
