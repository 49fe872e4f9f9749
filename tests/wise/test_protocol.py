"""The WISE protocol end to end: loading real and bundled data, the graph, runs, records and summaries."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest
from PIL import Image
from pydantic import ValidationError

from tests.support.shared_data import shared_data
from umni.backends.bindings import Bindings
from umni.backends.contract import Backend
from umni.backends.roles import GENERATE, JUDGE, ImageReply, TextReply
from umni.protocols.protocol import get_protocol
from umni.run.evaluation import Prepared, RunRequest, evaluate, evaluate_async
from umni.util.errors import BackendError, ConfigError, InputError
from umni.util.policy import RetryPolicy
from umni.util.spec import Spec
from umni_cases import bundled
from umni_graphs.wise import PROTOCOL, WiseOptions
from umni_graphs.wise.cases import CATEGORIES, load_prompts


def real_data() -> Path:
    """The real WISE files beside the repository (../shared/data/wise); a missing folder fails the test."""
    return shared_data("wise")


BUNDLED_VERIFIED_IDS = [1, 2, 3, 401, 402, 403, 521, 522, 523, 641, 642, 643, 761, 762, 763, 881, 882, 883]
BUNDLED_LEGACY_IDS = [1, 2, 3, 401, 402, 403, 568, 569, 570, 701, 702, 703, 801, 802, 803, 901, 902, 903]


def options(**values: str | bool) -> WiseOptions:
    opts = PROTOCOL.parse_options(dict(values))
    assert isinstance(opts, WiseOptions)
    return opts


# --------------------------------------------------------------------------------------- a test backend


class ScriptedWise(Backend):
    """Draws a plain square for every prompt and answers the judge from a script keyed by prompt text.

    It records every text it was asked to draw from, so a test can check what generation saw.
    `fail_generate` names prompts whose drawing fails for good (a non-retryable backend error).
    """

    provider = "wisetest"
    roles = frozenset({GENERATE, JUDGE})

    def __init__(self, replies: dict[str, str], *, fail_generate: Sequence[str] = ()) -> None:
        super().__init__(Spec(provider="wisetest", name="scripted"))
        self.replies = replies
        self.fail_generate = set(fail_generate)
        self.drawn: list[str] = []
        self.judged: dict[str, int] = {}

    async def generate(self, parts: Sequence[object], *, seed: int = 0) -> ImageReply:
        text = "\n".join(p for p in parts if isinstance(p, str))
        self.drawn.append(text)
        if text in self.fail_generate:
            raise BackendError("scripted: this prompt cannot be drawn", retryable=False)
        return ImageReply(Image.new("RGB", (16, 16), (len(text) % 256, 80, 160)))

    async def respond(self, parts: Sequence[object], *, max_tokens: int = 512, seed: int = 0) -> TextReply:
        text = "\n".join(p for p in parts if isinstance(p, str))
        assert any(isinstance(p, Image.Image) for p in parts), "the judge must see the image"
        matches = [prompt for prompt in self.replies if f'"{prompt}"' in text]
        assert len(matches) == 1, "the judge prompt should quote exactly one WISE prompt"
        self.judged[matches[0]] = self.judged.get(matches[0], 0) + 1
        return TextReply(self.replies[matches[0]])


def run_scripted(tmp_path: Path, backend: ScriptedWise, **option_values: str) -> tuple[dict, list[dict]]:
    """A real run (runner, cache, store, summary, report) of the bundled cases against `backend`."""
    opts = options(**option_values)
    case_set = PROTOCOL.load(PROTOCOL.bundled_cases(), opts)
    request = RunRequest(
        protocol="wise",
        out=tmp_path / "run",
        cache=tmp_path / "cache",
        options=dict(option_values),
        retry=RetryPolicy(initial_wait=0, max_wait=0, jitter=0),
        progress=False,
    )
    prepared = Prepared(PROTOCOL, opts, case_set, Bindings({GENERATE: backend, JUDGE: backend}))
    result = anyio.run(lambda: evaluate_async(request, prepared))
    records = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    return result.summary, records


def bundled_prompts(*names: str) -> dict[int, dict]:
    return {p.prompt_id: p.model_dump() for name in names for p in load_prompts(bundled("wise") / name)}


# --------------------------------------------------------------------------------------- options


def test_options_resolve_the_set_and_refuse_bad_combinations():
    assert options().model_dump() == {
        "scoring": "verified",
        "set": "verified",
        "rewrite": False,
        "judge_thinking": "off",
        "judge_prompt": None,
    }
    assert options(scoring="legacy").judge_thinking == "server"  # the legacy script called a hosted API
    assert options(judge_thinking="server").judge_thinking == "server"
    assert options(scoring="legacy").set == "legacy"
    assert options(scoring="legacy", set="verified").set == "verified"
    assert options(scoring="legacy", rewrite="true").rewrite is True
    with pytest.raises(ConfigError, match="rewrite"):
        options(rewrite="true")  # the verified set has no rewrites
    with pytest.raises(ConfigError, match="scoring"):
        options(scoring="gpt")
    with pytest.raises(ValidationError):
        WiseOptions(judge="x")  # extra="forbid"


def test_protocol_is_registered():
    assert get_protocol("wise") is PROTOCOL


# --------------------------------------------------------------------------------------- loading


@pytest.mark.parametrize(
    "values",
    [{}, {"scoring": "legacy"}, {"scoring": "legacy", "rewrite": "true"}],
    ids=["verified", "legacy", "rewrite"],
)
def test_real_data_loads_1000_prompts_from_the_official_layout(values):
    case_set = PROTOCOL.load(real_data(), options(**values))
    assert [c.prompt.prompt_id for c in case_set.cases] == list(range(1, 1001))
    assert case_set.path == real_data() / options(**values).set
    assert not any(n.record == "(whole set)" for n in case_set.notes)
    category_notes = [n.record for n in case_set.notes if n.field == "Category"]
    assert category_notes == (["prompt_id 748"] if values.get("rewrite") else [])
    sizes = {name: sum(c.category == name for c in case_set.cases) for name in CATEGORIES}
    if options(**values).set == "verified":
        assert sizes == {"culture": 400, "time": 120, "space": 120, "biology": 120, "physics": 120, "chemistry": 120}
    else:
        assert sizes == {"culture": 400, "time": 167, "space": 133, "biology": 100, "physics": 100, "chemistry": 100}
    if values.get("rewrite"):
        assert {c.file for c in case_set.cases} == {
            "cultural_common_sense_rewrite.json",
            "spatio-temporal_reasoning_rewrite.json",
            "natural_science_rewrite.json",
        }


def test_real_single_files_and_set_folders_load():
    merged = PROTOCOL.load(real_data() / "verified" / "merge.json", options())
    assert len(merged.cases) == 1000 and {c.file for c in merged.cases} == {"merge.json"}
    science = PROTOCOL.load(real_data() / "legacy" / "natural_science.json", options(scoring="legacy"))
    assert [c.prompt.prompt_id for c in science.cases] == list(range(701, 1001))
    assert [n.message.split(" of ")[0] for n in science.notes if n.record == "(whole set)"] == ["700"]
    folder = PROTOCOL.load(real_data() / "legacy", options(scoring="legacy"))
    assert len(folder.cases) == 1000
    with pytest.raises(InputError, match="set=legacy"):  # legacy files are never read with verified ranges
        PROTOCOL.load(real_data() / "legacy", options())
    with pytest.raises(InputError, match="rewrite"):
        PROTOCOL.load(real_data() / "legacy" / "natural_science.json", options(scoring="legacy", rewrite="true"))


def test_bundled_sample_states_that_most_ids_are_missing():
    case_set = PROTOCOL.load(PROTOCOL.bundled_cases(), options())
    assert [c.prompt.prompt_id for c in case_set.cases] == BUNDLED_VERIFIED_IDS
    (note,) = [n for n in case_set.notes if n.record == "(whole set)"]
    assert note.message.startswith("982 of the 1000 verified prompt ids are not in these files")


# --------------------------------------------------------------------------------------- graph


@pytest.mark.parametrize("values", [{}, {"scoring": "legacy"}, {"scoring": "legacy", "rewrite": "true"}])
def test_generation_sees_the_prompt_only_and_the_judge_sees_the_explanation(values):
    opts = options(**values)
    for case in PROTOCOL.load(PROTOCOL.bundled_cases(), opts).cases:
        graph = PROTOCOL.build(case, opts)
        assert set(graph.nodes) == {"image", "judge"}
        assert graph.nodes["image"].prompt == (case.prompt.Prompt,)
        judge_text = "\n".join(p for p in graph.nodes["judge"].prompt if isinstance(p, str))
        assert case.prompt.Explanation in judge_text and case.prompt.Prompt in judge_text
        assert case.prompt.Explanation not in case.prompt.Prompt


def test_rewrite_option_generates_from_the_rewrite_prompts():
    originals = bundled_prompts(
        "legacy/cultural_common_sense.json", "legacy/natural_science.json", "legacy/spatio-temporal_reasoning.json"
    )
    rewrites = bundled_prompts(
        "legacy/cultural_common_sense_rewrite.json",
        "legacy/natural_science_rewrite.json",
        "legacy/spatio-temporal_reasoning_rewrite.json",
    )
    plain, rewritten = options(scoring="legacy"), options(scoring="legacy", rewrite="true")
    plain_cases = {c.prompt.prompt_id: c for c in PROTOCOL.load(PROTOCOL.bundled_cases(), plain).cases}
    rewrite_cases = {c.prompt.prompt_id: c for c in PROTOCOL.load(PROTOCOL.bundled_cases(), rewritten).cases}
    assert sorted(rewrite_cases) == sorted(plain_cases) == BUNDLED_LEGACY_IDS
    for pid in BUNDLED_LEGACY_IDS:
        assert PROTOCOL.build(rewrite_cases[pid], rewritten).nodes["image"].prompt == (rewrites[pid]["Prompt"],)
        assert PROTOCOL.build(plain_cases[pid], plain).nodes["image"].prompt == (originals[pid]["Prompt"],)
        assert rewrites[pid]["Prompt"] != originals[pid]["Prompt"]


# --------------------------------------------------------------------------------------- offline runs


@pytest.mark.parametrize("scoring", ["verified", "legacy"])
def test_sim_run_completes_on_bundled_cases(tmp_path, scoring):
    result = evaluate(
        RunRequest(
            protocol="wise",
            out=tmp_path / "run",
            cache=tmp_path / "cache",
            model="sim/umm",
            options={"scoring": scoring},
            progress=False,
        )
    )
    summary = result.summary
    scores = summary.scores
    ids = BUNDLED_VERIFIED_IDS if scoring == "verified" else BUNDLED_LEGACY_IDS
    assert summary.counts.cases == 18 and summary.counts.failed == 0
    assert scores["set"] == scoring and scores["scoring"] == scoring and scores["rewrite"] is False
    assert scores["metric"] == ("accuracy" if scoring == "verified" else "wiscore")
    assert scores["scored"] == 18 and scores["failed"] == 0 and scores["failures"] == {}
    assert scores["missing"] == 982 and scores["expected"] == 1000
    assert scores["missing_ids"] == sorted(set(range(1, 1001)) - set(ids))
    assert scores["coverage"].startswith("982 of the 1000 expected")
    assert "judge" in scores
    # The summary again by hand from the records: category means of the per-prompt scores, then the
    # paper's weights written out.
    records = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert sorted(r["prompt_id"] for r in records) == ids
    means = {}
    for name in CATEGORIES:
        values = [r["score"] for r in records if r["category"] == name]
        assert len(values) == 3
        means[name] = sum(values) / 3
        assert scores[name] == pytest.approx(means[name], abs=1e-4)
    weights = {"culture": 0.4, "time": 0.167, "space": 0.133, "biology": 0.1, "physics": 0.1, "chemistry": 0.1}
    if scoring == "verified":
        weights = {"culture": 0.40, "time": 0.12, "space": 0.12, "biology": 0.12, "physics": 0.12, "chemistry": 0.12}
    assert scores["overall"] == pytest.approx(sum(weights[n] * means[n] for n in CATEGORIES), abs=1e-4)
    for record in records:
        if scoring == "legacy":
            m = record["marks"]
            assert record["score"] == pytest.approx(
                (0.7 * m["consistency"] + 0.2 * m["realism"] + 0.1 * m["aesthetic_quality"]) / 2
            )
        else:
            assert record["score"] in (0, 1) and record["score"] == record["marks"]["score"]
    html = result.report.read_text()
    assert "Coverage" in html and "982" in html


def test_verified_run_with_scripted_judge_counts_failures_apart(tmp_path):
    prompts = bundled_prompts("verified/merge.json")
    reply = {
        1: "Score: 1", 2: "Score: 1", 3: "Score: 0",
        401: "Score: 1", 402: "The image looks lovely.", 403: "Score: 0",
        521: "Score: 1", 522: "Score: 1", 523: "Score: 1",
        641: "Score: 0", 642: "Score: 7", 643: "Score: 0",
        761: "**Score**: 1", 762: "Score: 0", 763: "Score: 1",
        881: "Score: 1", 882: "Score: 1", 883: "Score: 0",
    }  # fmt: skip
    broken = prompts[523]["Prompt"]
    backend = ScriptedWise({prompts[i]["Prompt"]: text for i, text in reply.items()}, fail_generate=[broken])
    summary, records = run_scripted(tmp_path, backend)
    scores = summary.scores
    by_id = {r["prompt_id"]: r for r in records}

    # Generation never saw an explanation; the judge of the undrawn prompt was never called.
    assert sorted(backend.drawn) == sorted(p["Prompt"] for p in prompts.values())
    assert not any(p["Explanation"] in text for p in prompts.values() for text in backend.drawn)
    assert broken not in backend.judged

    # The unreadable reply was asked again (1 + 2 parse retries), then recorded as a parse failure, not a 0.
    assert backend.judged[prompts[402]["Prompt"]] == 3
    assert by_id[402]["failure"] == "parse" and by_id[402]["score"] is None and by_id[402]["marks"] is None
    assert by_id[402]["judge_reply"] == "The image looks lovely." and by_id[402]["judge_attempts"] == 3
    assert by_id[642]["failure"] == "invalid" and by_id[642]["score"] is None
    assert by_id[523]["failure"] == "missing_image" and by_id[523]["image"] is None
    assert by_id[523]["nodes"]["judge"]["status"] == "blocked"
    assert by_id[761]["score"] == 1 and by_id[3]["score"] == 0

    # By hand: culture 2/3, time 1/2 (402 failed), space 2/2 (523 not drawn), biology 0/2 (642 invalid),
    # physics 2/3, chemistry 2/3.
    assert {n: scores[n] for n in CATEGORIES} == {
        "culture": 0.6667, "time": 0.5, "space": 1.0, "biology": 0.0, "physics": 0.6667, "chemistry": 0.6667
    }  # fmt: skip
    # 0.40·2/3 + 0.12·(0.5 + 1 + 0 + 2/3 + 2/3) = 0.26667 + 0.34
    assert scores["overall"] == pytest.approx(0.6067, abs=1e-4)
    assert scores["scored"] == 15 and scores["failed"] == 3
    assert scores["failures"] == {"invalid": 1, "missing_image": 1, "parse": 1}
    assert scores["failures_by_category"] == {"time/parse": 1, "space/missing_image": 1, "biology/invalid": 1}
    assert (scores["scored_by_category"]["space"], scores["failed_by_category"]["space"]) == (2, 1)
    assert (
        summary.failures["parse"] == 1
        and summary.failures["invalid"] == 1
        and summary.failures["backend"] == 1
    )

    titles = [t for t, _, _ in PROTOCOL.tables(summary.to_json())]
    assert titles[1] == "Failures by kind (counted apart from scores)"
    failure_rows = {row[0]: row[1:] for row in PROTOCOL.tables(summary.to_json())[1][2]}
    assert failure_rows["parse"] == [0, 1, 0, 0, 0, 0, 1]
    views = PROTOCOL.views(by_id[402])
    assert views[0].image == by_id[402]["image"] and views[1].title == "Judge · parse failure"
    assert ("judge reply", "The image looks lovely.") in views[1].rows
    assert ("explanation (judge only)", prompts[402]["Explanation"]) in views[0].rows


def test_legacy_run_with_scripted_judge_matches_hand_computed_wiscore(tmp_path):
    prompts = bundled_prompts(
        "legacy/cultural_common_sense.json", "legacy/natural_science.json", "legacy/spatio-temporal_reasoning.json"
    )
    reply = dict.fromkeys(prompts, "Consistency: 2\nRealism: 1\nAesthetic Quality: 0")  # WiScore 0.8
    reply[1] = "**Consistency**: 1\n**Realism**: 1\n**Aesthetic Quality**: 1"  # 0.5
    reply[2] = "2\n2\n2"  # bare digits, read as C, R, A: 1.0
    reply[401] = "Consistency: 2"  # marks missing: parse failure
    backend = ScriptedWise({prompts[i]["Prompt"]: text for i, text in reply.items()})
    summary, records = run_scripted(tmp_path, backend, scoring="legacy")
    scores = summary.scores
    # (0.7 + 0.2 + 0.1) / 2 in the official floating-point order
    assert {r["prompt_id"]: r["score"] for r in records}[1] == 0.49999999999999994
    # culture (0.5 + 1.0 + 0.8)/3; the rest 0.8 (time over its two readable replies).
    assert scores["culture"] == pytest.approx(0.7667, abs=1e-4)
    assert all(scores[n] == pytest.approx(0.8) for n in CATEGORIES[1:])
    # 0.4·0.76667 + (0.167 + 0.133 + 0.1·3)·0.8
    assert scores["overall"] == pytest.approx(0.306667 + 0.6 * 0.8, abs=1e-4)
    assert scores["failures"] == {"parse": 1} and scores["scored_by_category"]["time"] == 2
    # Mean marks of culture: C (1 + 2 + 2)/3, R (1 + 2 + 1)/3, A (1 + 2 + 0)/3.
    marks = {key: scores[key]["culture"] for key in ("consistency", "realism", "aesthetic_quality")}
    assert marks == {"consistency": 1.6667, "realism": 1.3333, "aesthetic_quality": 1.0}
    assert [row[0] for row in PROTOCOL.tables(summary.to_json())[2][2]] == ["Consistency", "Realism", "Aesthetic Quality"]


# --------------------------------------------------------------------------------------- summary only


def test_summary_from_hand_made_records():
    records = [
        {
            "prompt_id": 1,
            "marks": {"consistency": 2, "realism": 2, "aesthetic_quality": 2},
            "failure": None,
        },  # culture 1.0
        {
            "prompt_id": 401,
            "marks": {"consistency": 1, "realism": 2, "aesthetic_quality": 1},
            "failure": None,
        },  # time 0.6
        {"prompt_id": 402, "marks": None, "failure": "parse"},
        {
            "prompt_id": 568,
            "marks": {"consistency": 0, "realism": 1, "aesthetic_quality": 2},
            "failure": None,
        },  # space 0.2
        {
            "prompt_id": 701,
            "marks": {"consistency": 2, "realism": 1, "aesthetic_quality": 0},
            "failure": None,
        },  # biology 0.8
        {
            "prompt_id": 801,
            "marks": {"consistency": 0, "realism": 0, "aesthetic_quality": 0},
            "failure": None,
        },  # physics 0.0
        {"prompt_id": 901, "marks": None, "failure": "missing_image"},
    ]
    scores = PROTOCOL.summarize(records, options(scoring="legacy"), judge="openai/gpt-4o-2024-05-13")
    assert scores["judge"] == "openai/gpt-4o-2024-05-13"
    assert [scores[n] for n in CATEGORIES] == [1.0, 0.6, 0.2, 0.8, 0.0, None]
    assert scores["overall"] is None  # chemistry has no score, so there is no Overall
    assert "left empty" in scores["coverage"]
    assert scores["scored"] == 5 and scores["failed"] == 2 and scores["missing"] == 993
    # Ids map to categories by the set: 521 is time in the legacy set, space in the verified one.
    binary = [{"prompt_id": i, "marks": {"score": s}, "failure": None} for i, s in [(1, 1), (520, 0), (521, 1)]]
    verified = PROTOCOL.summarize(binary, options())
    assert (verified["culture"], verified["time"], verified["space"]) == (1.0, 0.0, 1.0)
    on_legacy = PROTOCOL.summarize(binary, options(set="legacy"))
    assert (on_legacy["culture"], on_legacy["time"], on_legacy["space"]) == (1.0, 0.5, None)
    assert on_legacy["weights"]["time"] == 0.167 and on_legacy["metric"] == "accuracy"
