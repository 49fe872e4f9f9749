"""The summary.json ``scores`` of a GIR-Bench run, from its records alone, and the report's tables.

Each metric's summary counts its cases, failures and skips beside its score, and where umni computes
its own figure too (``umni_score``), that figure sits beside the official one. A group's Overall is
given only when every metric of the group has a score; the Visual Puzzle FID is one statistic over
the whole set, left out of bootstrap resamples.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from umni.plugin import HeadlineParts, Number, Scores

from . import scoring
from .dataset import UNI_CATEGORIES
from .deviations import deviations
from .options import GirOptions
from .records import GirRecord, MetricEntry, shown_value
from .tasks import EDIT_METRICS, METRIC_TASK, METRIC_TITLES, METRICS, T2I_METRICS

#: What Visual Puzzle's score is: why it has no interval and no per-case share.
PUZZLE_SET_STATISTIC = "exp(−FID/60) of one Fréchet distance over the whole set of outputs"


class UniScores(Scores):
    """Uni (the paired understanding and generation tasks): each category's score and the Overall."""

    understanding: dict[str, Number | None]
    generation: dict[str, Number | None]


class GirScores(Scores):
    """summary.json ``scores`` of a GIR-Bench run: the paper's groups (each with its Overall, None
    unless every metric of the group has a score), the Overall of the metrics that have one, and
    each metric's own summary (cases, failures, skips, umni's figure beside the official one)."""

    uni: UniScores
    t2i: dict[str, Number | None]
    edit: dict[str, Number | None]
    overall: Number | None
    #: the metrics the Overall averages
    overall_of: list[str]
    puzzle_fid: Number | None
    #: metric -> its summary (`_metric_summary`)
    metrics: dict[str, dict[str, Any]]
    failed_cases: int
    skip_roles: list[str]
    features: str
    deviations: list[dict[str, Any]]


def summarize_records(records: Sequence[GirRecord], options: GirOptions) -> GirScores:
    return _summarize(records, options, set_statistics=True)


def summarize_resample_records(records: Sequence[GirRecord], options: GirOptions) -> GirScores:
    """A bootstrap resample's scores without the puzzle's Fréchet distance: a set statistic whose
    every computation takes seconds to a minute (torchmetrics' 2048-d eigen-decomposition), so
    300 of them made a run's finish take many minutes. Where the full formula would have
    computed it, the Overall (which averages it in) is left out too; the Edit Overall already
    is, having no puzzle score. Those cells carry no interval."""
    scores = _summarize(records, options, set_statistics=False)
    puzzles = sum(1 for r in records if _puzzle_scored(r))
    return scores.model_copy(update={"overall": None}) if puzzles >= 2 else scores


def unresampled(scores: Mapping[str, Any]) -> dict[str, str]:
    """With a puzzle score, the cells `summarize_resample_records` leaves out, and why."""
    if (scores.get("metrics", {}).get("puzzle") or {}).get("score") is None:
        return {}
    averaged = f"averages in Visual Puzzle, whose score ({PUZZLE_SET_STATISTIC}) no resample recomputes"
    own = f"Visual Puzzle's score is {PUZZLE_SET_STATISTIC}, which no resample recomputes"
    return {"metrics/puzzle/score": own, "metrics/puzzle/fid": own, "puzzle_fid": own, "edit/puzzle": own,
            "edit/overall": averaged, "overall": averaged}


def stratum(record: GirRecord) -> str:
    """The case's task, a Uni entity's with its category: the Overall averages the tasks (and a
    Uni side its categories), and a group's Overall needs all three of its tasks."""
    return f"{record['task']}/{record['category']}" if record.get("category") else str(record["task"])


def headline_parts(records: Sequence[GirRecord]) -> HeadlineParts | str:
    """Overall = the mean of the scored tasks' scores, a Uni side's score the mean of its
    categories' means: each task (each Uni side × category) a component, weighted 1 / tasks
    (÷ the side's categories), a scored case adding its value and a count of one. None with a
    puzzle score: it is a statistic of the whole set, of which no case has a share."""
    cases: list[dict[str, tuple[float, float]]] = []
    for record in records:
        terms: dict[str, tuple[float, float]] = {}
        for key, entry in (record.get("metrics") or {}).items():
            scored = entry.get("status") == "scored"
            if key == "puzzle" and scored:
                return f"the Overall averages in Visual Puzzle, whose score is {PUZZLE_SET_STATISTIC}: no case has a share of it"
            component = f"{key}/{entry.get('category')}" if key.startswith("uni_") else key
            terms[component] = (_value(entry), 1.0) if scored else (0.0, 0.0)
        cases.append(terms)
    counted = sorted({k for terms in cases for k, (_, count) in terms.items() if count})
    tasks = {k.split("/")[0] for k in counted}
    weights = {k: 1.0 / len(tasks) / sum(c.split("/")[0] == k.split("/")[0] for c in counted) for k in counted}
    return HeadlineParts(weights, cases)


def _summarize(records: Sequence[GirRecord], options: GirOptions, *, set_statistics: bool) -> GirScores:
    by_metric: dict[str, list[MetricEntry]] = {key: [] for key, _, _ in METRICS}
    for record in records:
        for key, entry in (record.get("metrics") or {}).items():
            by_metric.setdefault(key, []).append(entry)
    metrics = {key: _metric_summary(key, by_metric[key], options, set_statistics=set_statistics) for key, _, _ in METRICS}
    scored = [key for key, _, _ in METRICS if metrics[key]["score"] is not None]
    und, gen = metrics["uni_understanding"], metrics["uni_generation"]
    return GirScores(
        uni=UniScores(
            understanding={**und["categories"], "overall": und["score"]},
            generation={**gen["categories"], "overall": gen["score"]},
        ),
        t2i={**{k: metrics[k]["score"] for k in T2I_METRICS}, "overall": _group_overall(metrics, T2I_METRICS)},
        edit={**{k: metrics[k]["score"] for k in EDIT_METRICS}, "overall": _group_overall(metrics, EDIT_METRICS)},
        overall=_mean([metrics[k]["score"] for k in scored]),
        overall_of=scored,
        puzzle_fid=metrics["puzzle"].get("fid"),
        metrics=metrics,
        failed_cases=sum(m["failed"] for m in metrics.values()),
        skip_roles=sorted(options.skipped_roles),
        features=options.features,
        deviations=deviations(metrics, options.features),
    )


def score_tables(summary: dict[str, Any]) -> list[tuple[str, list[str], list[list[Any]]]]:
    s = summary["scores"]
    uni_rows = [
        [side.capitalize(), *(s["uni"][side][c] for c in UNI_CATEGORIES), s["uni"][side]["overall"]]
        for side in ("understanding", "generation")
    ]
    main_row = [*(s["t2i"][k] for k in T2I_METRICS), s["t2i"]["overall"], *(s["edit"][k] for k in EDIT_METRICS), s["edit"]["overall"]]
    main_header = [*(METRIC_TITLES[k] for k in T2I_METRICS), "T2I Overall", *(METRIC_TITLES[k] for k in EDIT_METRICS), "Edit Overall"]
    detail_rows = [
        [METRIC_TITLES[key], m["score"], m["scored"], m["failed"], m["skipped"], m["note"] or ""]
        for key, m in ((k, s["metrics"][k]) for k in METRIC_TITLES if k in s["metrics"])
    ]
    return [
        ("GIR-Bench-Uni (understanding: VQA accuracy; generation: feature similarity)", ["Side", *UNI_CATEGORIES, "Overall"], uni_rows),
        ("GIR-Bench-T2I and GIR-Bench-Edit", main_header, [main_row]),
        (
            f"Cases per metric (overall over scored metrics: {shown_value(s['overall'])})",
            ["Metric", "Score", "Scored", "Failed", "Skipped", "Note"],
            detail_rows,
        ),
    ]


def why_no_overall(s: GirScores) -> str | None:
    """The Overall averages the metrics that have a score: empty when none has, each for the
    reason its own summary notes (not selected, its role not bound, no cases, none scorable)."""
    if s.overall is not None:
        return None
    by_note: dict[str, list[str]] = {}
    for key, _, title in METRICS:
        by_note.setdefault(s.metrics[key]["note"] or "no score", []).append(title)
    notes = [f"{note}: {', '.join(titles) if len(titles) <= 3 else f'{len(titles)} metrics'}" for note, titles in by_note.items()]
    return f"no metric has a score ({'; '.join(notes)})"


def _mean(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if values else None


def _metric_summary(metric: str, entries: list[MetricEntry], options: GirOptions, *, set_statistics: bool = True) -> dict[str, Any]:
    scored = [e for e in entries if e["status"] == "scored"]
    failed = [e for e in entries if e["status"] == "failed"]
    skipped = [e for e in entries if e["status"] == "skipped"]
    out: dict[str, Any] = {
        "score": None,
        "cases": len(entries),
        "scored": len(scored),
        "failed": len(failed),
        "failures": dict(sorted(Counter(e["failure"] for e in failed).items())),
        "skipped": len(skipped),
        "skip_reasons": dict(sorted(Counter(e["reason"] for e in skipped).items())),
        "note": None,
    }
    if metric == "puzzle" and not set_statistics:  # a bootstrap resample (`summarize_resample`)
        out.update(fid=None, note="the Fréchet distance is not recomputed for resamples")
    elif metric == "puzzle":
        result = scoring.puzzle_score(entries, official=options.features == "official")
        out.update(score=result["score"], fid=result["fid"], note=result["note"] if scored else None)
    elif metric.startswith("uni_"):
        by_category: dict[str, list[float]] = defaultdict(list)
        for e in scored:
            by_category[e["category"]].append(_value(e))
        out["categories"] = {c: _mean(by_category[c]) for c in UNI_CATEGORIES}
        present = [v for v in out["categories"].values() if v is not None]
        out["score"] = _mean(present)  # the paper's Overall: the mean of the category scores
    else:
        out["score"] = _mean([_value(e) for e in scored])
    if metric in ("sudoku", "spatial", "numerical"):  # umni's figure beside the official one (deviations.py)
        cells = [e["detail"].get("umni_score") for e in scored]
        known = [v for v in cells if v is not None]
        out["umni_score"] = _mean(known)
        out["umni_scored"] = len(known)
    if not entries:
        unmet = options.unmet_roles(metric)
        if options.task_list and METRIC_TASK[metric] not in options.task_list:
            out["note"] = "not selected (--option tasks)"
        elif unmet:
            out["note"] = f"not run: {' and '.join(unmet)} role not bound (skip_roles)"
        else:
            out["note"] = "no cases"
    elif not scored and out["note"] is None:
        if len(skipped) == len(entries):
            out["note"] = "not run: " + "; ".join(out["skip_reasons"])
        else:
            out["note"] = "no case could be scored"
    return out


def _puzzle_scored(record: GirRecord) -> bool:
    entry = (record.get("metrics") or {}).get("puzzle")
    return entry is not None and entry.get("status") == "scored"


def _value(entry: MetricEntry) -> float:
    """A scored entry's value: every metric but Visual Puzzle (scored over the whole set) has one."""
    value = entry["value"]
    assert value is not None, "a scored entry of this metric has a value"
    return value


def _group_overall(metrics: dict[str, dict[str, Any]], keys: Sequence[str]) -> float | None:
    """The paper's group Overall, only when every metric of the group has a score (else not comparable)."""
    values = [metrics[k]["score"] for k in keys]
    return None if any(v is None for v in values) else float(np.mean(values))
