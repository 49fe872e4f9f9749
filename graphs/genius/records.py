"""A case's outcomes as one results.jsonl record, and a record's rounds as scoring items.

The record keeps every judge call (mark or failure, and what the judge wrote), so a summary can be
recomputed and a report drawn from results.jsonl alone.

**Failures.** A judge answer outside the format is retried by the engine and then recorded as a
parse failure: that metric of that case is counted under ``judge_failures`` and left out of the
mean, never scored 0. An output that is missing because the model returned a degenerate image
scores 0 as in the official code and is also counted (``missing_outputs``). A generation that failed
for other reasons (backend errors after retries, a blocked input) is not a model answer at all: the
case is left unscored and counted under ``unscored``. Cases whose context images are missing are
skipped at load time with the list of missing files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from umni.errors import InputError
from umni.outcomes import Outcome
from umni.protocol import node_status

from . import scoring
from .cases import GeniusCase
from .digests import stored_png_sha256
from .graph import PLAN_NODE, PROBE_NODE, round_node
from .options import GeniusOptions
from .tasks import GeniusTask


def case_record(task: GeniusTask, outcomes: dict[str, Outcome], o: GeniusOptions) -> dict[str, Any]:
    """The task, every round as it went, and the score of the last round that ran (the case's score)."""
    case = task.case
    rounds = [_round_record(case, k, outcomes, o) for k in range(o.reflection_rounds + 1)]
    ran = [r for r in rounds if r["ran"]]
    final = ran[-1] if ran else None
    if final is None:
        first = outcomes[round_node(0, "image")]
        unscored: str | None = f"generation {first.status}: an input it needs did not finish"
    else:
        unscored = final["unscored"]
    return {
        "case_id": task.key,
        "dimension": case.dimension,
        "id": case.id,
        "context": case.context,
        "instruction": case.instruction,
        "rc_hint": case.rc_hint,
        "vc_hints": [hint.text for hint in case.vc_hints],
        "context_images": [_context_image(ref.name, ref.path) for ref in case.context_images],
        "plan": _text_record(outcomes.get(PLAN_NODE)),
        "rounds": rounds,
        "final_round": final["round"] if final else None,
        "item": final["item"] if final else None,
        "scores": final["scores"] if final else None,
        "unscored": unscored,
        "probe": _probe_record(task, outcomes.get(PROBE_NODE)) if o.vqa_probe else None,
        "nodes": node_status(outcomes),
    }


def _round_record(case: GeniusCase, k: int, outcomes: dict[str, Outcome], o: GeniusOptions) -> dict[str, Any]:
    """One generation round with all its judge calls; scored only if its image was made or degenerate."""
    made = outcomes[round_node(k, "image")]
    ran = made.status not in ("skipped", "blocked")
    entry: dict[str, Any] = {
        "round": k,
        "status": _status(made),
        "ran": ran,
        "image": made.image.sha256 if made.image else None,
        "failure": _failure(made),
        "critique": _text_record(outcomes.get(round_node(k, "critique"))),
        "rc": [_judgement(outcomes[round_node(k, f"rc/{j}")]) for j in range(o.judge_rounds)],
        "aq": [_judgement(outcomes[round_node(k, f"aq/{j}")]) for j in range(o.judge_rounds)],
        "vc": [],
        "item": None,
        "scores": None,
        "unscored": None,
    }
    for h, hint in enumerate(case.vc_hints):
        pixels = outcomes[round_node(k, f"vc{h}/pixels")]
        entry["vc"].append(
            {
                "hint": hint.text,
                "reference": hint.reference.name,
                "pixels": pixels.value if pixels.ok else None,
                "pixels_status": _status(pixels),
                "copy": [_judgement(outcomes[round_node(k, f"vc{h}/copy/{j}")]) for j in range(o.judge_rounds)] if o.copy_judge else [],
                "rounds": [_judgement(outcomes[round_node(k, f"vc{h}/{j}")]) for j in range(o.judge_rounds)],
            }
        )
    if not ran:
        return entry
    if made.ok:
        item = scoring.GeniusItem(
            dimension=case.dimension,
            id=case.id,
            vc_hints=len(case.vc_hints),
            rc=[_as_round(j) for j in entry["rc"]],
            aq=[_as_round(j) for j in entry["aq"]],
            vc=[_hint_judgement(v) for v in entry["vc"]],
        )
    elif made.failure is not None and made.failure.kind == "degenerate":
        item = scoring.GeniusItem(dimension=case.dimension, id=case.id, vc_hints=len(case.vc_hints), output_missing=True)
    else:
        entry["unscored"] = f"generation failed ({made.failure.kind if made.failure else made.status})"
        return entry
    entry["item"] = item.model_dump(mode="json")
    entry["scores"] = _item_scores(scoring.score_item(item))
    return entry


def _context_image(name: str, path: Path) -> dict[str, Any]:
    """A context image by the hash the runner stores it under, so report views can show it."""
    try:
        digest: str | None = stored_png_sha256(path)
    except (OSError, ValueError, InputError):  # a bad image is the generate node's input failure
        digest = None
    return {"name": name, "image": digest}


def _status(outcome: Outcome | None) -> str:
    if outcome is None:
        return "absent"
    return "done" if outcome.ok else outcome.status


def _failure(outcome: Outcome | None) -> dict[str, Any] | None:
    """What went wrong, with the raw answer cut short so one bad reply cannot bloat results.jsonl."""
    if outcome is None or outcome.failure is None:
        return None
    f = outcome.failure
    data: dict[str, Any] = {"kind": f.kind, "message": f.message, "attempts": f.attempts}
    if f.raw is not None:
        data["raw"] = f.raw[:1000]
    return data


def _text_record(outcome: Outcome | None) -> dict[str, Any] | None:
    if outcome is None:
        return None
    text = outcome.output.get("text") if outcome.ok and outcome.output else None
    return {"status": _status(outcome), "text": text, "failure": _failure(outcome)}


def _judgement(outcome: Outcome) -> dict[str, Any]:
    """One judge call as recorded: its mark or its failure, and what the judge wrote."""
    output = outcome.output if outcome.ok and outcome.output else {}
    return {
        "status": _status(outcome),
        "value": output.get("value"),
        "text": output.get("text"),
        "attempts": output.get("parse_attempts"),
        "failure": _failure(outcome),
    }


# ------------------------------------------------------------------------------ record → scoring item


def _as_round(judgement: dict[str, Any]) -> int | scoring.JudgeFailure:
    """A recorded judge call as scoring reads it: a mark, or a failure that is counted, never 0."""
    if judgement["status"] == "done":
        return int(judgement["value"])
    failure = judgement["failure"]
    kind = failure["kind"] if failure else judgement["status"]
    return scoring.JudgeFailure(kind=kind, detail=(failure or {}).get("message", ""))


def _hint_judgement(vc: dict[str, Any]) -> scoring.HintJudgement:
    """Copy verdict first (pixels, then the judge's Copy rounds), VC rounds only if not a copy."""
    copied: bool | scoring.JudgeFailure
    if vc["pixels"] is None:
        copied = scoring.JudgeFailure(kind="internal", detail=f"pixel copy check {vc['pixels_status']}")
    elif vc["pixels"]["copy"]:
        copied = True
    elif vc["copy"]:
        copied = scoring.copy_verdict([_as_round(j) for j in vc["copy"]])
    else:
        copied = False
    rounds = [_as_round(j) for j in vc["rounds"]] if copied is False else []
    return scoring.HintJudgement(copied=copied, rounds=rounds)


def _item_scores(score: scoring.ItemScore) -> dict[str, Any]:
    """An item's scores as JSON; a metric the judge could not give is named by its failure kind."""

    def shown(value: float | scoring.JudgeFailure | None) -> Any:
        if isinstance(value, scoring.JudgeFailure):
            return {"failure": value.kind}
        return value

    return {"rc": shown(score.rc), "vc": shown(score.vc), "aq": shown(score.aq), "output_missing": score.output_missing}


def _probe_record(task: GeniusTask, outcome: Outcome | None) -> dict[str, Any]:
    """The probe's answer; "unavailable" when the graph had no probe (fewer than two options)."""
    if outcome is None:
        return {"status": "unavailable", "options": task.probe_options, "answer": task.probe_answer,
                "predicted": None, "correct": None, "failure": None, "text": None, "mode": None}
    output = outcome.output if outcome.ok and outcome.output else {}
    predicted = output.get("index")
    return {
        "status": _status(outcome),
        "options": task.probe_options,
        "answer": task.probe_answer,
        "predicted": predicted,
        "correct": (predicted == task.probe_answer) if predicted is not None else None,
        "failure": _failure(outcome),
        "text": output.get("text"),
        "mode": output.get("mode"),
    }
