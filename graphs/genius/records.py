"""A case's outcomes as one results.jsonl record, a record's rounds as scoring items, and how a
record appears in the report.

The record keeps every judge call (mark or failure, and what the judge wrote), so a summary can be
recomputed and a report drawn from results.jsonl alone. Failures are always shown as failures
("parse failure (not scored)"), never as a 0.

**Failures.** A judge answer outside the format is retried by the engine and then recorded as a
parse failure: that metric of that case is counted under ``judge_failures`` and left out of the
mean, never scored 0. An output that is missing because the model returned a degenerate image
scores 0 as in the official code and is also counted (``missing_outputs``). A generation that failed
for other reasons (backend errors after retries, a blocked input) is not a model answer at all: the
case is left unscored and counted under ``unscored``. Cases whose context images are missing are
skipped at load time with the list of missing files.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypedDict

from umni.plugin import InputError, Outcome, Ref, View, node_status, option_letter

from . import prompts as P
from . import scoring
from .cases import GeniusTask
from .dataset import DIMENSION_TITLES, GeniusCase
from .digests import stored_png_sha256
from .graph import GeniusHandles, HintHandles, RoundHandles
from .options import GeniusOptions


class FailureRecord(TypedDict, total=False):
    kind: str
    message: str
    attempts: int
    raw: str  # only when the backend replied: cut to 1,000 characters


class TextRecord(TypedDict):
    """A respond node (plan, critique): its text or why there is none."""

    status: str
    text: str | None
    failure: FailureRecord | None


class JudgementRecord(TypedDict):
    """One judge call: its mark or failure, the judge's text, and the official parser's reading."""

    status: str
    value: int | None
    text: str | None
    attempts: int | None
    failure: FailureRecord | None
    official: int | None


class HintRecord(TypedDict):
    """One vc_hint in one round: its copy checks and Visual Consistency rounds."""

    hint: str
    reference: str | None
    pixels: dict[str, Any] | None
    pixels_status: str
    copy: JudgementRecord | None
    rounds: list[JudgementRecord]


class RoundRecord(TypedDict, total=False):
    """One generation round as it went; `official_item` is present once the round was scored."""

    round: int
    status: str
    ran: bool
    image: str | None
    failure: FailureRecord | None
    critique: TextRecord | None
    rc: list[JudgementRecord]
    aq: list[JudgementRecord]
    vc: list[HintRecord]
    item: dict[str, Any] | None
    scores: dict[str, Any] | None
    unscored: str | None
    official_item: dict[str, Any] | None


class ProbeRecord(TypedDict):
    status: str
    options: list[str]
    answer: int
    predicted: int | None
    correct: bool | None
    failure: FailureRecord | None
    text: str | None
    mode: str | None


class ContextImageRecord(TypedDict):
    name: str
    image: str | None


class GeniusResult(TypedDict):
    """One results.jsonl line: the task, every round, and the score of the last round that ran."""

    case_id: str
    dimension: str
    id: str | int
    context: str
    instruction: str
    rc_hint: str
    vc_hints: list[str]
    context_images: list[ContextImageRecord]
    plan: TextRecord | None
    rounds: list[RoundRecord]
    final_round: int | None
    item: dict[str, Any] | None
    official_item: dict[str, Any] | None
    scores: dict[str, Any] | None
    unscored: str | None
    probe: ProbeRecord | None
    nodes: dict[str, dict[str, Any]]


def case_record(task: GeniusTask, outcomes: Mapping[str, Outcome], handles: GeniusHandles, o: GeniusOptions) -> GeniusResult:
    """The task, every round as it went, and the score of the last round that ran (the case's score).

    `handles` are those `build_case_graph` returned for this task: every node is read through them."""
    case = task.case
    rounds = [_round_record(case, k, outcomes, round_handles) for k, round_handles in enumerate(handles.rounds)]
    ran = [r for r in rounds if r["ran"]]
    final = ran[-1] if ran else None
    if final is None:
        first = outcomes[handles.rounds[0].image.node]
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
        "plan": _text_record(_get(outcomes, handles.plan)),
        "rounds": rounds,
        "final_round": final["round"] if final else None,
        "item": final["item"] if final else None,
        "official_item": final.get("official_item") if final else None,
        "scores": final["scores"] if final else None,
        "unscored": unscored,
        "probe": _probe_record(task, _get(outcomes, handles.probe)) if o.vqa_probe else None,
        "nodes": node_status(outcomes),
    }



def final_marks(record: GeniusResult) -> dict[str, float | None]:
    """The final round's RC, VC and AQ marks (0–100) of a case, for judge agreement."""
    scores = record.get("scores") or {}
    return {metric: scores.get(metric) for metric in scoring.METRICS}

def _get(outcomes: Mapping[str, Outcome], ref: Ref | None) -> Outcome | None:
    """The outcome behind an optional handle (None: the graph has no such node)."""
    return outcomes.get(ref.node) if ref is not None else None


def _judgements(outcomes: Mapping[str, Outcome], refs: tuple[Ref, ...], metric: str) -> list[JudgementRecord]:
    return [_judgement(outcomes[ref.node], metric) for ref in refs]


def _round_record(case: GeniusCase, k: int, outcomes: Mapping[str, Outcome], handles: RoundHandles) -> RoundRecord:
    """One generation round with all its judge calls; scored only if its image was made or degenerate."""
    made = outcomes[handles.image.node]
    ran = made.status not in ("skipped", "blocked")
    entry: RoundRecord = {
        "round": k,
        "status": _status(made),
        "ran": ran,
        "image": made.image.sha256 if made.image else None,
        "failure": _failure(made),
        "critique": _text_record(_get(outcomes, handles.critique)),
        "rc": _judgements(outcomes, handles.rc, "rc"),
        "aq": _judgements(outcomes, handles.aq, "aq"),
        "vc": [],
        "item": None,
        "scores": None,
        "unscored": None,
    }
    for hint, checks in zip(case.vc_hints, handles.vc, strict=True):
        if hint.reference is None or checks is None:  # no image to judge against: 0 in every round, as officially
            entry["vc"].append({"hint": hint.text, "reference": None, "pixels": None, "pixels_status": "absent", "copy": None, "rounds": []})
            continue
        entry["vc"].append(_hint_record(hint.text, hint.reference.name, outcomes, checks))
    if not ran:
        return entry
    shape: dict[str, Any] = {"dimension": case.dimension, "id": case.id, "vc_hints": len(case.vc_hints), "vc_task": case.has_vc}
    if made.ok:
        item = scoring.GeniusItem(
            **shape,
            rc=[_as_round(j) for j in entry["rc"]],
            aq=[_as_round(j) for j in entry["aq"]],
            vc=_hint_judgements(entry["vc"]),
        )
        official = official_item(entry, shape)
    elif made.failure is not None and made.failure.kind == "degenerate":
        item = scoring.GeniusItem(**shape, output_missing=True)
        official = item
    else:
        entry["unscored"] = f"generation failed ({made.failure.kind if made.failure else made.status})"
        return entry
    entry["item"] = item.model_dump(mode="json")
    entry["scores"] = _item_scores(scoring.score_item(item))
    entry["official_item"] = official.model_dump(mode="json") if official is not None else None
    return entry


def _hint_record(text: str, reference: str, outcomes: Mapping[str, Outcome], checks: HintHandles) -> HintRecord:
    pixels = outcomes[checks.pixels.node]
    return {
        "hint": text,
        "reference": reference,
        "pixels": pixels.value if pixels.ok else None,
        "pixels_status": _status(pixels),
        "copy": _judgement(outcomes[checks.copy.node], "copy") if checks.copy is not None else None,
        "rounds": _judgements(outcomes, checks.rounds, "vc"),
    }


def _context_image(name: str, path: Path) -> ContextImageRecord:
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


def _failure(outcome: Outcome | None) -> FailureRecord | None:
    """What went wrong, with the raw answer cut short so one bad reply cannot bloat results.jsonl."""
    if outcome is None or outcome.failure is None:
        return None
    f = outcome.failure
    data: FailureRecord = {"kind": f.kind, "message": f.message, "attempts": f.attempts}
    if f.raw is not None:
        data["raw"] = f.raw[:1000]
    return data


def _text_record(outcome: Outcome | None) -> TextRecord | None:
    if outcome is None:
        return None
    text = outcome.output.get("text") if outcome.ok and outcome.output else None
    return {"status": _status(outcome), "text": text, "failure": _failure(outcome)}


def _judgement(outcome: Outcome, metric: str) -> JudgementRecord:
    """One judge call as recorded: its mark or its failure, what the judge wrote, and what the
    official parser reads in that text (``official``; None when there was no reply at all)."""
    output = outcome.output if outcome.ok and outcome.output else {}
    reply = output.get("text") if outcome.ok else (outcome.failure.raw if outcome.failure else None)
    return {
        "status": _status(outcome),
        "value": output.get("value"),
        "text": output.get("text"),
        "attempts": output.get("parse_attempts"),
        "failure": _failure(outcome),
        "official": P.official_reading(reply, metric) if reply is not None else None,
    }


# ------------------------------------------------------------------------------ record → scoring item


def _as_round(judgement: Mapping[str, Any]) -> int | scoring.JudgeFailure:
    """A recorded judge call as scoring reads it: a mark, or a failure that is counted, never 0."""
    if judgement["status"] == "done":
        return int(judgement["value"])
    failure = judgement["failure"]
    kind = failure["kind"] if failure else judgement["status"]
    return scoring.JudgeFailure(kind=kind, detail=(failure or {}).get("message", ""))


def _hint_judgements(hints: list[HintRecord]) -> list[scoring.HintJudgement]:
    """Copy verdicts in hint order (pixels, then the judge's one ``Copy`` answer, 0 meaning a copy);
    once one says copy, later hints were not asked (None) and no VC round counts."""
    out: list[scoring.HintJudgement] = []
    decided = False  # a copy, or a check that failed: the later checks were not asked
    for vc in hints:
        if vc["reference"] is None:
            out.append(scoring.HintJudgement(copied=False, has_reference=False))
            continue
        copied: bool | scoring.JudgeFailure | None
        if decided:
            copied = None
        elif vc["pixels"] is None:
            copied = scoring.JudgeFailure(kind="internal", detail=f"pixel copy check {vc['pixels_status']}")
        elif vc["pixels"]["copy"]:
            copied = True
        elif vc["copy"] is None:  # copy_judge=false: the pixels decide alone
            copied = False
        elif vc["copy"]["status"] == "done":
            copied = vc["copy"]["value"] == 0
        else:
            failed = _as_round(vc["copy"])
            copied = failed if isinstance(failed, scoring.JudgeFailure) else scoring.JudgeFailure(kind="internal")
        decided = decided or copied is not False
        out.append(scoring.HintJudgement(copied=copied, rounds=[]))
    if not decided:
        out = [
            h if not h.has_reference else h.model_copy(update={"rounds": [_as_round(j) for j in vc["rounds"]]})
            for h, vc in zip(out, hints)
        ]
    return out


def official_item(entry: Mapping[str, Any], shape: dict[str, Any]) -> scoring.GeniusItem | None:
    """The round as the official ``eval.py`` would score the same replies: every reply read by the
    official parser (no label -> 0, ``1.5`` -> 1, ``3`` -> 3), a copy when a ``Copy`` reply reads 0.
    None when a judge call left no reply at all (the official script drops such an item)."""
    def marks(judgements: list[JudgementRecord]) -> list[int | scoring.JudgeFailure] | None:
        values = [j["official"] for j in judgements]
        return None if any(v is None for v in values) else [v for v in values if v is not None]

    rc, aq = marks(entry["rc"]), marks(entry["aq"])
    if rc is None or aq is None:
        return None
    hints: list[scoring.HintJudgement] = []
    copied_before = False
    for vc in entry["vc"]:
        if vc["reference"] is None:
            hints.append(scoring.HintJudgement(copied=False, has_reference=False))
            continue
        if copied_before:
            hints.append(scoring.HintJudgement(copied=None))
            continue
        pixel_copy = bool(vc["pixels"] and vc["pixels"]["copy"])
        reading = vc["copy"]["official"] if vc["copy"] is not None else 1
        copied = pixel_copy or reading == 0
        copied_before = copied
        hints.append(scoring.HintJudgement(copied=copied))
    if not copied_before:
        rounds_by_hint: list[list[int | scoring.JudgeFailure]] = []
        for vc in entry["vc"]:
            if vc["reference"] is None:
                rounds_by_hint.append([])
                continue
            values = marks(vc["rounds"])
            if values is None:
                return None
            rounds_by_hint.append(values)
        hints = [h if not h.has_reference else h.model_copy(update={"rounds": r}) for h, r in zip(hints, rounds_by_hint)]
    return scoring.GeniusItem(**shape, rc=rc, aq=aq, vc=hints)


def _item_scores(score: scoring.ItemScore) -> dict[str, Any]:
    """An item's scores as JSON; a metric the judge could not give is named by its failure kind."""

    def shown(value: float | scoring.JudgeFailure | None) -> Any:
        if isinstance(value, scoring.JudgeFailure):
            return {"failure": value.kind}
        return value

    return {"rc": shown(score.rc), "vc": shown(score.vc), "aq": shown(score.aq), "output_missing": score.output_missing}


def _probe_record(task: GeniusTask, outcome: Outcome | None) -> ProbeRecord:
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


# ------------------------------------------------------------------------------ report views


def case_views(record: Mapping[str, Any]) -> list[View]:
    """The task and its context images, the plan, every round (skipped ones say why), the probe."""
    hints = [("rc_hint", record["rc_hint"])] + [(f"vc_hint {i + 1}", h) for i, h in enumerate(record["vc_hints"])]
    task = View(f"Task · {DIMENSION_TITLES.get(record['dimension'], record['dimension'])}", None,
                [("context", record["context"]), ("instruction", record["instruction"]), *hints])
    views = [task] + [View(f"context image {c['name']}", c["image"]) for c in record["context_images"]]
    if record["plan"] is not None:
        views.append(View("Plan", None, [("plan", _shown_text(record["plan"]))]))
    for entry in record["rounds"]:
        views.append(_round_view(entry, record["final_round"]))
    if record.get("probe"):
        views.append(_probe_view(record["probe"]))
    return views


def _shown_text(entry: dict[str, Any] | None, limit: int = 600) -> str:
    """A recorded reply, shortened for the page; a failed one shows its failure and raw answer instead."""
    if entry is None:
        return "—"
    if entry.get("text") is not None:
        text = entry["text"]
        return text if len(text) <= limit else text[:limit] + " …"
    failure = entry.get("failure")
    if failure:
        raw = f" · raw: {failure['raw'][:300]}" if failure.get("raw") else ""
        return f"{failure['kind']} failure after {failure['attempts']} attempt(s): {failure['message']}{raw}"
    return entry.get("status", "—")


def _copy_text(judgement: dict) -> str:
    """The judge's one Copy answer, in words (0 means a copy, as in the official prompt)."""
    if judgement["status"] != "done":
        return judgement["status"]
    return "copy (Copy: 0)" if judgement["value"] == 0 else "not a copy (Copy: 1)"


def _marks(judgements: list[dict[str, Any]]) -> str:
    return ", ".join(str(j["value"]) if j["status"] == "done" else j["status"] for j in judgements)


def _score_text(value: Any) -> str:
    if isinstance(value, dict):
        return f"{value['failure']} failure (not scored)"
    return "—" if value is None else f"{value:g}"


def _round_view(entry: dict[str, Any], final_round: int | None) -> View:
    k = entry["round"]
    if not entry["ran"]:
        reason = "RC of the previous round reached 2" if entry["status"] == "skipped" else "an input failed"
        return View(f"Round {k} · {entry['status']} ({reason})", None, [])
    title = f"Round {k}" + (" · final" if k == final_round else "")
    rows: list[tuple[str, str]] = []
    if entry["failure"]:
        rows.append(("generation", _shown_text({"failure": entry["failure"]})))
    scores = entry["scores"] or {}
    rows.append(("RC", f"{_score_text(scores.get('rc'))} · marks {_marks(entry['rc'])}"))
    rows += [(f"RC judge {j + 1}", _shown_text(x)) for j, x in enumerate(entry["rc"])]
    if entry["vc"]:
        rows.append(("VC", f"{_score_text(scores.get('vc'))}"))
    for h, vc in enumerate(entry["vc"]):
        pixels = vc["pixels"]
        if pixels is None:
            pixel_text = "not checked"
        else:
            pixel_text = "exact copy" if pixels["copy"] else f"not a copy (mean diff {pixels['mean_abs_diff']:g})"
        rows.append((f"VC hint {h + 1}", vc["hint"]))
        if vc["reference"] is None:
            rows.append((f"copy check {h + 1}", "no reference image named: this hint counts 0 in every round"))
            continue
        judge_text = "off" if vc["copy"] is None else _copy_text(vc["copy"])
        rows.append((f"copy check {h + 1}", f"pixels: {pixel_text}; judge: {judge_text}"))
        rows.append((f"VC marks {h + 1}", _marks(vc["rounds"])))
        rows += [(f"VC {h + 1} judge {j + 1}", _shown_text(x)) for j, x in enumerate(vc["rounds"]) if x["status"] != "skipped"]
    rows.append(("AQ", f"{_score_text(scores.get('aq'))} · marks {_marks(entry['aq'])}"))
    if entry["critique"] is not None and entry["critique"]["status"] != "skipped":
        rows.append(("feedback", _shown_text(entry["critique"])))
    rc = scores.get("rc")
    verdict = rc == 100 if isinstance(rc, (int, float)) else None
    return View(title, entry["image"], rows, verdict=verdict)


def _probe_view(probe: dict[str, Any]) -> View:
    rows = [(option_letter(i), text + (" (key)" if i == probe["answer"] else "")) for i, text in enumerate(probe["options"])]
    if probe["predicted"] is not None:
        rows.append(("answered", option_letter(probe["predicted"])))
    else:
        rows.append(("answered", _shown_text(probe)))
    return View("VQA probe", None, rows, verdict=probe["correct"])
