"""A prompt's outcomes as one results.jsonl record, and how a record appears in the report.

Failures stay out of the means: a missing image and a judge reply that is still unusable after the
engine's bounded retries are counted per category by kind, and prompts the case set lacks are
listed by id in the summary. Each record keeps the official script's reading of the kept judge reply
(``official``), so the summary can put the official figure beside umni's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

from umni.plugin import Outcome, View, node_status

from . import prompts as P
from . import scoring as S
from .cases import Variant, WiseCase
from .graph import WiseHandles
from .options import WiseOptions


class WiseRecord(TypedDict):
    """One results.jsonl line: the prompt as given, the judge's marks (or why there are none), the
    official script's reading of the kept reply, and node statuses."""

    case_id: str
    prompt_id: int
    set: Variant
    rewrite: bool
    #: the case file the prompt was read from
    file: str
    #: the category its id places it in (the id decides, as officially) and the file's own label
    category: str
    category_label: str
    subcategory: str
    prompt: str
    explanation: str
    image_name: str
    #: the generated image's content hash; None when it was not produced
    image: str | None
    scoring: Variant
    #: verified: {"score": 0|1}; legacy: the three 0-2 marks; None when the prompt is not scored
    marks: dict[str, int] | None
    #: verified: the 0/1 score; legacy: the WiScore
    score: float | int | None
    #: why there is no score (a kind counted by the summary), and the readable detail
    failure: str | None
    detail: str
    judge_reply: str | None
    #: what the official script reads in the kept reply; None where it would drop the prompt
    official: dict[str, float] | None
    judge_attempts: int | None
    nodes: dict[str, dict[str, Any]]


def case_record(case: WiseCase, outcomes: Mapping[str, Outcome], handles: WiseHandles, options: WiseOptions) -> WiseRecord:
    image = outcomes.get(handles.image.node)
    judge = outcomes.get(handles.judge.node)
    marks: dict[str, int] | None = judge.value if judge is not None and judge.ok else None
    failure, detail = _failure(image, judge)
    score: float | int | None = None
    if marks is not None:
        score = S.wiscore(**marks) if options.scoring == "legacy" else marks["score"]
    reply = None
    if judge is not None and judge.ok and judge.output:
        reply = judge.output.get("text")
    elif judge is not None and judge.failure is not None:
        reply = judge.failure.raw
    return {
        "case_id": case.id,
        "prompt_id": case.prompt.prompt_id,
        "set": case.set,
        "rewrite": case.rewrite,
        "file": case.file,
        "category": case.category,
        "category_label": case.prompt.Category,
        "subcategory": case.prompt.Subcategory,
        "prompt": case.prompt.Prompt,
        "explanation": case.prompt.Explanation,
        "image_name": case.prompt.image_name,
        "image": image.image.sha256 if image is not None and image.image else None,
        "scoring": options.scoring,
        "marks": marks,
        "score": score,
        "failure": failure,
        "detail": detail,
        "judge_reply": reply,
        "official": _official_reading(options.scoring, image, reply),
        "judge_attempts": _attempts(judge),
        "nodes": node_status(outcomes),
    }


def judge_marks(record: WiseRecord) -> dict[str, float | None]:
    """The judge's marks of a prompt (verified: score; legacy: consistency, realism, aesthetic quality)."""
    marks = record.get("marks") or {}
    return {name: float(value) for name, value in marks.items() if isinstance(value, (int, float))}


def with_marks(record: WiseRecord, marks: Mapping[str, float]) -> WiseRecord | None:
    """The record with its judge's marks replaced by `marks` (those of `judge_marks`; others kept)
    and its score made from them as the record's scoring makes it (WiScore, or the binary mark,
    which a calibrated judge may put between 0 and 1). A prompt without marks stays unscored."""
    if record.get("marks") is None or record.get("failure") is not None:
        return record
    new: dict[str, Any] = {**(record["marks"] or {}), **{k: v for k, v in marks.items() if k in (record["marks"] or {})}}
    score = S.wiscore(**new) if record["scoring"] == "legacy" else new["score"]
    mapped = dict(record)
    mapped.update(marks=new, score=score)  # marks between whole marks: the record's types say int, a mapping gives floats
    return mapped  # type: ignore[return-value]


def case_views(record: WiseRecord) -> list[View]:
    rows = [
        ("prompt (given to the model)", record["prompt"]),
        ("explanation (judge only)", record["explanation"]),
        ("category", f"{record['category']} · {record['subcategory']} (file label: {record['category_label']})"),
        ("source", f"{record['file']} · {record['set']} set" + (" · rewrite" if record["rewrite"] else "")),
    ]
    if record["image"] is None:
        rows.append(("image", "— (not produced)"))
    views = [View(f"Prompt {record['prompt_id']} · {record['image_name']}", record["image"], rows)]
    judge_rows: list[tuple[str, str]] = []
    if record["marks"] is not None:
        judge_rows += [(key.replace("_", " "), str(value)) for key, value in record["marks"].items()]
    if record["score"] is not None and record["scoring"] == "legacy":
        judge_rows.append(("WiScore", f"{record['score']:.2f}"))
    if record["failure"] is not None:
        judge_rows.append((f"failure ({record['failure']})", record["detail"]))
    judge_rows.append(("judge reply", record["judge_reply"] if record["judge_reply"] is not None else "—"))
    official = record.get("official")
    if record["judge_reply"] is not None and official != record["marks"]:
        read = ", ".join(f"{k.replace('_', ' ')} {v:g}" for k, v in official.items()) if official else "unreadable"
        judge_rows.append(("official script's reading", f"{read} (a listed deviation)"))
    if record["judge_attempts"]:
        judge_rows.append(("judge attempts", str(record["judge_attempts"])))
    if record["failure"] is not None:
        title, verdict = f"Judge · {record['failure']} failure", None
    elif record["scoring"] == "legacy":
        title, verdict = f"Judge · WiScore {record['score']:.2f}", None
    else:
        title, verdict = f"Judge · Score {record['score']}", record["score"] == 1
    views.append(View(title, None, judge_rows, verdict=verdict))
    return views


def _failure(image: Outcome | None, judge: Outcome | None) -> tuple[str | None, str]:
    """Why a prompt has no score, as a short kind (counted) and a readable detail."""
    if image is None or not image.ok:
        if image is not None and image.failure is not None:
            return S.MISSING_IMAGE, f"the image was not produced ({image.failure.kind}): {image.failure.message}"
        return S.MISSING_IMAGE, f"the image was not produced ({image.status if image else 'no node'})"
    if judge is None:
        return "internal", "the case has no judge node"
    if judge.ok:
        return None, ""
    if judge.failure is not None:
        f = judge.failure
        return f.kind, f"judge {f.kind} failure after {f.attempts} attempt(s): {f.message}"
    return judge.status, f"the judge was {judge.status}"


def _attempts(judge: Outcome | None) -> int | None:
    if judge is None:
        return None
    if judge.ok and judge.output:
        return int(judge.output.get("parse_attempts", 1))
    return judge.failure.attempts if judge.failure else None


def _official_reading(scoring: str, image: Outcome | None, reply: str | None) -> dict[str, float] | None:
    """What the official script makes of the judge reply umni kept (or last saw, when it failed);
    None where it would have dropped the prompt (no image, nothing readable)."""
    if image is None or not image.ok or reply is None:
        return None
    if scoring == "legacy":
        return P.official_legacy_reading(reply)
    score = P.official_verified_reading(reply)
    return None if score is None else {"score": score}
