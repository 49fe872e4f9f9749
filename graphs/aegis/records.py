"""A case's outcomes as one results.jsonl record, and how a record appears in the report.

Failures: if any model-side node fails (or a node it needs does), the judge is blocked or skipped
and the case is an inference failure; if the judge's reply cannot be used after the engine's bounded
parse retries (wrong number of answers, not Y/N, no JSON), the case is an evaluation failure. Both
are counted beside the scores and never scored.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any, NotRequired, TypedDict

from umni.plugin import InputError, Outcome, View, check_image_file, encode_png, node_status

from . import prompts as P
from . import scoring
from .cases import LocatedCase
from .graph import AegisHandles
from .options import AegisOptions
from .prompts import ChecklistVerdict


class ImageFileRecord(TypedDict):
    path: str
    sha256: str | None


class OutputRecord(TypedDict):
    text: str | None
    images: list[str]
    markers: int | None


class ChecklistRecord(TypedDict):
    tag: str
    question: str
    negative: bool
    answer: str | None
    reason: str


class OfficialReading(TypedDict):
    """The case as the official scorer counts it: its last row (`status`, `score`), how the judge's
    answer list was read, the failure rows before it (a copy marked failed) and, where the official
    scripts would stop on the reply instead, why (`stop`; no figure then)."""

    status: str
    score: float | None
    read_as: NotRequired[str]
    failure_copies: NotRequired[int]
    stop: NotRequired[str]


class AegisResult(TypedDict):
    """One results.jsonl line; `plan` and `rewrite` only with those variants."""

    case_id: str
    id: Any
    domain: str
    task: str
    category: str
    domain_group: str
    reasoning_type: str
    prompt_variant: str
    prompt: str
    clear_prompt: str
    input_images: list[ImageFileRecord]
    ref_images: list[ImageFileRecord]
    ref_text: str
    plan: NotRequired[str | None]
    rewrite: NotRequired[str | None]
    output: OutputRecord
    checklist: list[ChecklistRecord]
    status: scoring.Status
    score: float | None
    detail: str
    official: OfficialReading
    judge_from_prose: bool
    judge_attempts: int | None
    nodes: dict[str, dict[str, Any]]


def case_record(case: LocatedCase, outcomes: Mapping[str, Outcome], handles: AegisHandles, options: AegisOptions) -> AegisResult:
    status, detail = _classify(outcomes, handles)
    judge = outcomes.get(handles.judge.node)
    answers: list[str | None] = [None] * len(case.checklist)
    reasons: list[str] = [""] * len(case.checklist)
    score = None
    if status == "scored" and judge is not None:
        value = judge.value
        answers = list(value["answers"])
        reasons = (list(value["reasons"]) + reasons)[: len(answers)]
        verdict = ChecklistVerdict(tuple(a == "Y" for a in answers), tuple(reasons))
        score = scoring.scored(case, verdict, invert_negative=options.invert_negative).score
    text_node = outcomes.get(handles.answer.node) if handles.answer is not None else None
    text = text_node.output.get("text") if text_node is not None and text_node.ok and text_node.output else None
    drawn = [outcomes[ref.node].image for ref in handles.images if ref.node in outcomes]
    images = [image.sha256 for image in drawn if image is not None]
    record: AegisResult = {
        "case_id": str(case.id),
        "id": case.id,
        "domain": f"{case.task} · {case.category}",
        "task": case.task,
        "category": case.category,
        "domain_group": case.domain_group,
        "reasoning_type": case.reasoning_type,
        "prompt_variant": options.prompt,
        "prompt": P.model_prompt(case, options.prompt),
        "clear_prompt": case.clear_prompt,
        "input_images": [{"path": p, "sha256": _file_sha(case.image_path(p))} for p in case.input_image],
        "ref_images": [{"path": p, "sha256": _file_sha(case.image_path(p))} for p in case.ref_image],
        "ref_text": case.ref_text,
        "output": {
            "text": text,
            "images": images,
            "markers": P.count_draw_markers(text) if case.task == "interleaved" and text is not None else None,
        },
        "checklist": [
            {"tag": item.tag, "question": item.question, "negative": item.negative, "answer": a, "reason": r}
            for item, a, r in zip(case.checklist, answers, reasons)
        ],
        "status": status,
        "score": score,
        "detail": detail,
        "official": _official_reading(status, judge, len(case.checklist)),
        "judge_from_prose": bool(status == "scored" and judge is not None and judge.value.get("from_prose")),
        "judge_attempts": _judge_attempts(judge),
        "nodes": node_status(outcomes),
    }
    if handles.plan is not None and handles.plan.node in outcomes:
        record["plan"] = _text_value(outcomes[handles.plan.node])
    if handles.rewrite is not None and handles.rewrite.node in outcomes:
        record["rewrite"] = _text_value(outcomes[handles.rewrite.node])
    return record


def checklist_score(record: AegisResult) -> dict[str, float | None]:
    """The checklist score of a case (fraction of Y), for judge agreement."""
    return {"score": record.get("score")}


def with_checklist_score(record: AegisResult, judgements: Mapping[str, float]) -> AegisResult:
    """The record with its checklist score (`checklist_score`'s ``score``) replaced: a calibrated
    judge's estimate of the fraction of Y. A case that was not scored stays unscored."""
    if record["status"] != "scored" or "score" not in judgements:
        return record
    return {**record, "score": float(judgements["score"])}


def case_views(record: AegisResult) -> list[View]:
    views: list[View] = []
    request_rows = [
        ("task", f"{record['task']} · {record['category']} ({record['domain_group']}) · {record['reasoning_type']}"),
        (f"{record['prompt_variant']} (given)", record["prompt"]),
    ]
    if record["prompt_variant"] != "clear_prompt":
        request_rows.append(("clear prompt", record["clear_prompt"]))
    inputs = record["input_images"]
    views.append(View("Request", inputs[0]["sha256"] if inputs else None, request_rows))
    for n, image in enumerate(inputs[1:], start=2):
        views.append(View(f"Input image {n}", image["sha256"], [("path", image["path"])]))
    for key, title, text in (("rewrite", "Rewritten prompt", record.get("rewrite")), ("plan", "Plan", record.get("plan"))):
        if key in record:
            views.append(View(title, None, [(key, text if text is not None else "— (failed)")]))
    out = record["output"]
    out_rows: list[tuple[str, str]] = []
    if out["text"] is not None:
        out_rows.append(("text", out["text"]))
    if out.get("markers") is not None:
        out_rows.append(("pictures", f"{len(out['images'])} drawn for {out['markers']} <image> marker(s)"))
    if record["status"] == "inference_failure":
        out_rows.append(("inference failure", record["detail"]))
    views.append(View("Output", out["images"][0] if out["images"] else None, out_rows, verdict=False if record["status"] == "inference_failure" else None))
    for n, sha in enumerate(out["images"][1:], start=2):
        views.append(View(f"Output image {n}", sha, []))
    refs = record["ref_images"]
    ref_rows = [("reference text", record["ref_text"])] if record["ref_text"].strip() else []
    views.append(View("Reference", refs[0]["sha256"] if refs else None, ref_rows))
    for n, image in enumerate(refs[1:], start=2):
        views.append(View(f"Reference image {n}", image["sha256"], []))
    rows = [
        (f"{i}. [{item['tag']}] {item['question']}", f"{item['answer'] or '—'}" + (f" · {item['reason']}" if item["reason"] else ""))
        for i, item in enumerate(record["checklist"], start=1)
    ]
    if record["status"] == "scored":
        title = f"Checklist · score {record['score']:.2f}"
        verdict: bool | None = record["score"] == 1.0
    else:
        title = f"Checklist · {record['status'].replace('_', ' ')}"
        rows.append((record["status"].replace("_", " "), record["detail"]))
        verdict = None
    views.append(View(title, None, rows, verdict=verdict))
    return views


def _classify(outcomes: Mapping[str, Outcome], handles: AegisHandles) -> tuple[scoring.Status, str]:
    """Scored, or which kind of failure kept the case from a score (with a readable reason).

    Nodes are looked at in node id order, so the node a reason names does not depend on timing."""
    evaluation = {handles.judge.node, *(ref.node for ref in handles.judge_inputs)}
    model_side = {nid: o for nid, o in sorted(outcomes.items()) if nid not in evaluation}
    failed = [(nid, o) for nid, o in model_side.items() if o.status == "failed"]
    if failed:
        nid, o = failed[0]
        assert o.failure is not None
        return "inference_failure", f"node '{nid}' failed ({o.failure.kind}): {o.failure.message}"
    blocked = [nid for nid, o in model_side.items() if o.status == "blocked"]
    if blocked:
        return "inference_failure", f"node '{blocked[0]}' was blocked by a failed input"
    judge = outcomes.get(handles.judge.node)
    if judge is None:
        return "evaluation_failure", "the case has no judge node"
    if judge.ok:
        return "scored", ""
    if judge.status == "skipped":
        return "inference_failure", "the model's output is empty or lacks a picture its text asks for; the judge was not called"
    if judge.status == "failed" and judge.failure is not None:
        f = judge.failure
        return "evaluation_failure", f"judge {f.kind} failure after {f.attempts} attempt(s): {f.message}"
    prep = [(nid, o) for nid, o in sorted(outcomes.items()) if nid in evaluation and o.failure is not None]
    reason = f"{prep[0][0]}: {prep[0][1].failure.message}" if prep and prep[0][1].failure else judge.status
    return "evaluation_failure", f"the judge's input could not be prepared ({reason})"


def _official_reading(status: scoring.Status, judge: Outcome | None, n_items: int) -> OfficialReading:
    """What the official scorer makes of the judge reply umni kept (or last saw, when it failed)."""
    if status == "inference_failure":
        return {"status": "inference_failure", "score": None}
    reply = None
    if judge is not None and judge.ok and judge.output:
        reply = judge.output.get("text")
    elif judge is not None and judge.failure is not None:
        reply = judge.failure.raw
    if not isinstance(reply, str):  # no reply at all: officially only the copy marked failed
        return {"status": "evaluation_failure", "score": None}
    read = P.official_judgement(reply, n_items)
    if read.stop is not None:
        return {"status": "evaluation_failure", "score": None, "stop": read.stop}
    last = read.rows[-1]
    out: OfficialReading = {"status": "scored" if last is not None else "evaluation_failure", "score": last, "read_as": read.read_as}
    if read.failure_copies:
        out["failure_copies"] = read.failure_copies
    return out


def _text_value(outcome: Outcome) -> str | None:
    """A plan's or rewrite's text; None when it failed (or did not run)."""
    return outcome.value if outcome.ok else None


def _judge_attempts(judge: Outcome | None) -> int | None:
    if judge is None:
        return None
    if judge.ok and judge.output:
        return int(judge.output.get("parse_attempts", 1))
    return judge.failure.attempts if judge.failure else None


@lru_cache(maxsize=4096)
def _stored_sha(path: str, mtime_ns: int, size: int) -> str:
    """The content hash under which the runner stores a case image (PNG re-encoding of the file)."""
    from PIL import Image

    check_image_file(path)  # InputError for a file that is no image or too large to decode
    with Image.open(path) as image:
        image.load()
        return hashlib.sha256(encode_png(image)).hexdigest()


def _file_sha(path: Path) -> str | None:
    try:
        stat = path.stat()
        return _stored_sha(str(path), stat.st_mtime_ns, stat.st_size)
    except (OSError, ValueError, InputError):  # the node reading it records why, as an input failure
        return None
