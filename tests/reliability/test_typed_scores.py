"""Typed scores: every protocol's `summarize` returns its `Scores` model, written to summary.json as
the dict it used to return, byte for byte; a plugin that still returns a plain dict keeps working.

The golden summaries (tests/golden/expected) are the contract: each protocol's model must read
them back and write exactly the same object, so a field out of order, an int turned float or a
None dropped shows up here, whatever the bundled run happens to produce.
"""

from __future__ import annotations

import json
from pathlib import Path
from statistics import mean
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError
from tiny_protocol import DrawAndJudge, ScriptedModel, run_protocol

from umni.backends.bindings import Bindings
from umni.protocols import Number, Scores, get_protocol, scores_json
from umni_graphs.aegis.summary import AegisScores
from umni_graphs.genius.summary import GeniusScores
from umni_graphs.girbench.summary import GirScores
from umni_graphs.umnibench.summary import UmniScores
from umni_graphs.wise.summary import WiseScores

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "expected"
MODELS: dict[str, type[Scores]] = {
    "umnibench": UmniScores,
    "genius": GeniusScores,
    "aegis": AegisScores,
    "wise": WiseScores,
    "girbench": GirScores,
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_summarize_returns_the_protocols_scores_model(name: str) -> None:
    protocol = get_protocol(name)
    scores = protocol.summarize([], protocol.parse_options({}))
    assert type(scores) is MODELS[name]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_model_writes_the_golden_scores_back_exactly(name: str) -> None:
    summary = json.loads((GOLDEN / name / "summary.json").read_text())
    scores = dict(summary["scores"])
    model = MODELS[name]
    if "judge" not in model.model_fields:  # the run layer names a judged protocol's judge after summarize
        scores.pop("judge", None)
    written = scores_json(model.model_validate(scores))
    assert json.dumps(written) == json.dumps(scores)  # same keys, same order, same number types


class Example(Scores):
    optional_sections = frozenset({"extra"})

    overall: Number | None
    count: Number
    by_group: dict[str, Number | None]
    extra: dict[str, int] | None = None


def test_scores_keep_ints_nones_and_field_order_and_omit_absent_sections() -> None:
    written = scores_json(Example(overall=None, count=0, by_group={"b": 1, "a": 0.5}))
    assert json.dumps(written) == '{"overall": null, "count": 0, "by_group": {"b": 1, "a": 0.5}}'
    with_extra = scores_json(Example(overall=0.25, count=2, by_group={}, extra={"x": 1}))
    assert list(with_extra) == ["overall", "count", "by_group", "extra"]


def test_scores_refuse_an_unknown_field_and_read_like_the_json() -> None:
    with pytest.raises(ValidationError):
        Example(overall=1, count=1, by_group={}, typo=3)  # type: ignore[call-arg]
    scores = Example(overall=1.5, count=1, by_group={"a": None})
    assert scores["overall"] == 1.5 and scores.get("by_group") == {"a": None} and scores.get("missing") is None


def test_a_plain_dict_or_other_model_is_written_as_it_is() -> None:
    class Plain(BaseModel):
        mean: float

    assert scores_json({"mean": 1, "n": None}) == {"mean": 1, "n": None}
    assert scores_json(Plain(mean=0.5)) == {"mean": 0.5}
    with pytest.raises(TypeError, match="must return a Scores model or a dict"):
        scores_json([1, 2])  # type: ignore[arg-type]


class JudgedScores(Scores):
    mean: Number | None
    judged: int
    unjudged: int


class TypedDrawAndJudge(DrawAndJudge):
    """The test protocol with typed scores: the same numbers as the dict-returning original (a
    protocol of our own would declare ``Protocol[TinyCase, NoOptions, dict[str, Any], JudgedScores]``)."""

    def summarize(self, records: list[dict[str, Any]], options: BaseModel) -> JudgedScores:  # type: ignore[override]
        judged = [r["score"] for r in records if r["score"] is not None]
        return JudgedScores(mean=mean(judged) if judged else None, judged=len(judged), unjudged=len(records) - len(judged))


def test_a_typed_and_a_dict_protocol_write_the_same_summary(tmp_path: Path) -> None:
    cases = tmp_path / "tiny.jsonl"
    cases.write_text('{"id": "c0", "prompt": "a red square"}\n{"id": "c1", "prompt": "a blue ball"}\n', encoding="utf-8")
    written = {}
    for protocol in (DrawAndJudge(), TypedDrawAndJudge()):
        model = ScriptedModel(judge=["Score: 2"])
        out = tmp_path / type(protocol).__name__
        result = run_protocol(protocol, cases, out, Bindings({"generate": model, "judge": model}))
        on_disk = json.loads((out / "summary.json").read_text())
        assert on_disk["scores"] == result.summary.scores.root
        written[type(protocol).__name__] = json.dumps(on_disk["scores"])
    # the dict path (an older plugin) and the model path give the same bytes, the judge named after
    assert written["DrawAndJudge"] == written["TypedDrawAndJudge"]
    assert written["DrawAndJudge"] == '{"mean": 2, "judged": 2, "unjudged": 0, "judge": "scripted/model"}'
