"""A GIR-Bench case's outcomes as one results.jsonl record, and how a record appears in the report.

A record holds one entry per metric of its task: scored (the value and the scorer's detail),
failed (the first failing node, named), or skipped (why). Visual Puzzle entries keep the two feature
vectors instead of a value: its FID is one statistic over the whole set, computed by the summary.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, Required, TypedDict

from umni.plugin import Outcome, Ref, View, first_failure, node_status

from .cases import GirCase, metric_unavailable
from .dataset import PerceptionCase, PuzzleCase, TextCase, UniCase, VisualLogicCase
from .graph import GirHandles
from .options import GirOptions
from .prompts import PERCEPTION_INSTRUCTION, PUZZLE_INSTRUCTION, SUDOKU_INSTRUCTION
from .tasks import METRIC_TITLES, T2I_METRICS


class MetricEntry(TypedDict, total=False):
    """One metric of a case: scored (its value and the scorer's detail; Visual Puzzle keeps the two
    feature vectors instead, its FID being one statistic over the whole set), failed (the first
    failing node, named) or skipped (why)."""

    status: Required[Literal["scored", "failed", "skipped"]]
    #: scored: the case's value (None for Visual Puzzle)
    value: float | None
    #: scored: what the scorer reports beside the value (its keys depend on the metric)
    detail: dict[str, Any]
    #: Visual Puzzle, scored: the output's and the solution's feature vectors
    features: dict[str, Any]
    #: failed: the failure's kind, the node it happened at, and its message
    failure: str
    node: str
    message: str
    #: skipped: why
    reason: str
    #: Uni: the entity's category
    category: str


class GirRecord(TypedDict, total=False):
    """One results.jsonl line: the case, what the model was asked, its image and one entry per metric
    of the case's task (Uni has two: understanding and generation)."""

    case_id: Required[str]
    task: Required[str]
    #: the case's id in the published files
    source_id: Required[str]
    #: Uni: the entity's category and name, and the generation prompt (None when the entity has none)
    category: str
    entity: str
    #: Uni and the text-to-image tasks: the prompt; the edit tasks: the instruction
    prompt: str | None
    instruction: str
    #: Text Rendering: the text the image must show
    target_text: str
    #: the generated or edited image's content hash; None when there is none
    image: Required[str | None]
    metrics: Required[dict[str, MetricEntry]]
    nodes: Required[dict[str, dict[str, Any]]]


class FailedAt(TypedDict):
    """The first node that failed, and how."""

    node: str
    kind: str
    message: str


def case_record(case: GirCase, outcomes: Mapping[str, Outcome], h: GirHandles, options: GirOptions) -> GirRecord:
    data = case.data
    rec: GirRecord = {"case_id": case.id, "task": case.task, "source_id": str(data.id)}  # type: ignore[typeddict-item]  # image, metrics, nodes follow
    metrics: dict[str, MetricEntry] = {}
    if isinstance(data, UniCase):
        rec["category"], rec["entity"], rec["prompt"] = data.category, data.display_name, case.prompt
        metrics["uni_understanding"] = _vqa_entry(case, outcomes, h.vqa, options)
        reason = metric_unavailable(case, "uni_generation", options)
        if reason is None:
            metrics["uni_generation"] = _entry(outcomes, h.score, h.related)
        else:
            metrics["uni_generation"] = {"status": "skipped", "reason": reason}
        for entry in metrics.values():
            entry["category"] = data.category
    elif isinstance(data, PuzzleCase):
        rec["instruction"] = PUZZLE_INSTRUCTION
        metrics["puzzle"] = _puzzle_entry(outcomes, h)
    else:
        if case.task in T2I_METRICS:
            rec["prompt"] = _text_of(case)
        else:
            rec["instruction"] = _text_of(case)
        metrics[case.task] = _entry(outcomes, h.score, h.related)
        if isinstance(data, TextCase):
            rec["target_text"] = data.text
    rec["image"] = _image_sha(outcomes, h.image)
    rec["metrics"] = metrics
    rec["nodes"] = node_status(outcomes)
    return rec


def _text_of(case: GirCase) -> str:
    data = case.data
    if isinstance(data, VisualLogicCase):
        return SUDOKU_INSTRUCTION.format(n=data.spec.grid_size)
    if isinstance(data, PerceptionCase):
        return PERCEPTION_INSTRUCTION.format(target=case.prompt)
    return data.prompt


def _vqa_entry(case: GirCase, outcomes: Mapping[str, Outcome], vqa: Ref | None, options: GirOptions) -> MetricEntry:
    reason = metric_unavailable(case, "uni_understanding", options)
    if reason is not None:
        return {"status": "skipped", "reason": reason}
    assert case.vqa is not None and vqa is not None
    outcome = outcomes[vqa.node]
    if not outcome.ok or outcome.output is None:
        failure = _first_failure(outcomes, [vqa]) or {"node": vqa.node, "kind": outcome.status, "message": outcome.status}
        return {"status": "failed", "failure": failure["kind"], "node": vqa.node, "message": failure["message"]}
    predicted = int(outcome.output["index"])
    detail = {
        "question": case.vqa.question,
        "options": list(case.vqa.options),
        "answer": case.vqa.answer,
        "predicted": predicted,
        "mode": outcome.output.get("mode"),
        "reference": case.vqa.image.name,
    }
    return {"status": "scored", "value": 1.0 if predicted == case.vqa.answer else 0.0, "detail": detail}


def _puzzle_entry(outcomes: Mapping[str, Outcome], h: GirHandles) -> MetricEntry:
    assert h.image is not None
    if h.features is not None:  # official: one compute node holds both feature vectors
        features = outcomes[h.features.node]
        if features.ok:
            return {"status": "scored", "value": None, "features": dict(features.value)}
        failure = _first_failure(outcomes, [h.image, h.features])
        if failure is None:
            return {"status": "skipped", "reason": "an input node was skipped"}
        return {"status": "failed", "failure": failure["kind"], "node": failure["node"], "message": failure["message"]}
    assert h.embeds is not None
    output, solution = outcomes[h.embeds[0].node], outcomes[h.embeds[1].node]
    if output.ok and solution.ok:
        return {"status": "scored", "value": None, "features": {"output": output.value, "solution": solution.value}}
    failure = _first_failure(outcomes, [h.image, *h.embeds])
    if failure is None:
        return {"status": "skipped", "reason": "an input node was skipped"}
    return {"status": "failed", "failure": failure["kind"], "node": failure["node"], "message": failure["message"]}


def _first_failure(outcomes: Mapping[str, Outcome], nodes: Iterable[Ref]) -> FailedAt | None:
    found = first_failure(outcomes, nodes)
    if found is None:
        return None
    nid, failure = found
    return {"node": nid, "kind": failure.kind, "message": failure.message}


def _entry(outcomes: Mapping[str, Outcome], score: Ref | None, related: Sequence[Ref]) -> MetricEntry:
    """A metric's record entry from its scoring node; a failure anywhere upstream is named, not scored."""
    assert score is not None
    score_node = score.node
    outcome = outcomes[score_node]
    if outcome.ok:
        detail = dict(outcome.value)
        return {"status": "scored", "value": float(detail.pop("score")), "detail": detail}
    if outcome.status == "skipped":
        return {"status": "skipped", "reason": "an input node was skipped"}
    failure = _first_failure(outcomes, [*related, score]) or {"node": score_node, "kind": "internal", "message": outcome.status}
    return {"status": "failed", "failure": failure["kind"], "node": failure["node"], "message": failure["message"]}


def _image_sha(outcomes: Mapping[str, Outcome], node: Ref | None) -> str | None:
    outcome = outcomes.get(node.node) if node is not None else None
    image = outcome.image if outcome is not None else None
    return image.sha256 if image is not None else None


def case_views(record: GirRecord) -> list[View]:
    views = []
    metrics = record.get("metrics") or {}
    for key, entry in sorted(metrics.items(), key=lambda item: list(METRIC_TITLES).index(item[0]) if item[0] in METRIC_TITLES else 99):
        rows: list[tuple[str, str]] = []
        for field in ("prompt", "instruction", "target_text", "entity"):
            if record.get(field):
                rows.append((field.replace("_", " "), str(record[field])))
        verdict: bool | None = None
        if entry["status"] == "scored":
            score = entry.get("value")
            if score is not None:
                rows.append(("score", shown_value(score)))
                verdict = score >= 0.5
            for name, value in (entry.get("detail") or {}).items():
                rows.append((name.replace("_", " "), shown_value(value)))
            if "features" in entry:
                rows.append(("features", f"{len(entry['features']['output'])}-d, scored over the whole set"))
        elif entry["status"] == "failed":
            rows.append(("failed", f"{entry['failure']} at node {entry.get('node')}: {entry.get('message', '')}"))
        else:
            rows.append(("not run", entry.get("reason", "")))
        image = record.get("image") if key != "uni_understanding" else None
        views.append(View(METRIC_TITLES.get(key, key), image, rows, verdict))
    return views


def shown_value(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)
