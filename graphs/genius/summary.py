"""The summary.json "scores" of a GENIUS run, from its records alone, and the report's tables.

Scores follow the paper's main table (0–100 per dimension and metric, Overall weighted); judge
failures, missing outputs and unscored cases are counted beside them, never folded in. The
reflection and probe sections appear only when those options were on.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from statistics import fmean
from typing import Any

from umni.plugin import GENERATE, HeadlineParts, Number, Scores

from . import scoring
from .dataset import DIMENSION_TITLES, DIMENSIONS, DIMENSIONS_WITHOUT_VC
from .deviations import deviations
from .options import GeniusOptions


class Metrics(Scores):
    """A count per metric (RC, VC, AQ)."""

    rc: int
    vc: int
    aq: int


class FailuresByMetric(Scores):
    """Judge failures per metric, by failure kind."""

    rc: dict[str, int]
    vc: dict[str, int]
    aq: dict[str, int]


class DimensionScores(Scores):
    items: int
    #: cases of the dimension, those left unscored (no item) included
    cases: int
    #: items scored on each metric, and cases each metric applies to (scored, failed or unscored)
    scored: Metrics
    applicable: Metrics
    missing_outputs: int
    rc: Number | None
    vc: Number | None
    aq: Number | None
    #: metric -> failure kind -> judge failures, only the metrics that had any
    judge_failures: dict[str, dict[str, int]]


class OfficialEquivalent(Scores):
    """The same runs scored as the official scripts would (see `_official_equivalent`)."""

    overall: Number | None
    rc: Number | None
    vc: Number | None
    aq: Number | None
    items: int
    dropped: int


class RoundScores(Scores):
    round: int
    overall: Number | None
    rc: Number | None
    vc: Number | None
    aq: Number | None
    cases_running: int


class ReflectionScores(Scores):
    critic: str
    max_rounds: int
    #: rounds run (as a string) -> cases
    rounds_run: dict[str, int]
    stopped_early: int
    by_round: list[RoundScores]


class ProbeTally(Scores):
    accuracy: Number | None
    answered: int
    correct: int
    failed: int
    unavailable: int


class ProbeScores(ProbeTally):
    chance: Number | None
    dimensions: dict[str, ProbeTally]
    #: probe verdict -> final RC bucket -> cases
    versus_rc: dict[str, dict[str, int]]


class GeniusScores(Scores):
    """summary.json ``scores`` of a GENIUS run (0–100; failures counted beside, never as 0).
    `reflection` and `probe` appear only when those options were on."""

    optional_sections = frozenset({"reflection", "probe"})

    overall: Number | None
    rc: Number | None
    vc: Number | None
    aq: Number | None
    dimensions: dict[str, DimensionScores]
    cases: int
    scored: Metrics
    #: cases each metric applies to (VC: those with a reference image to keep), scored or not
    applicable: Metrics
    #: cases scored on every metric that applies to them: the Overall's coverage
    complete: int
    judge_failures: FailuresByMetric
    missing_outputs: int
    #: why a case has no scoring item -> cases
    unscored: dict[str, int]
    weights: dict[str, Number]
    scale: int
    judge_rounds: int
    input_format: str
    vc_counted_as_zero: bool
    official_equivalent: OfficialEquivalent
    deviations: list[dict[str, Any]]
    reflection: ReflectionScores | None = None
    probe: ProbeScores | None = None


def summarize_records(records: Sequence[Mapping[str, Any]], o: GeniusOptions) -> GeniusScores:
    """Scores of the cases' final rounds, pooled (data-weighted) and per dimension."""
    items = [r["item"] for r in records if r.get("item") is not None]
    result = scoring.summarize(items)
    dimensions = {
        name: DimensionScores(
            items=d.items,
            cases=sum(r["dimension"] == name for r in records),
            scored=Metrics(rc=d.rc.scored, vc=d.vc.scored if d.vc else 0, aq=d.aq.scored),
            applicable=_applicable([r for r in records if r["dimension"] == name]),
            missing_outputs=d.missing_outputs,
            rc=_rounded(d.rc.mean),
            vc=_rounded(d.vc.mean) if d.vc else None,
            aq=_rounded(d.aq.mean),
            judge_failures={m: r.failures for m, r in (("rc", d.rc), ("vc", d.vc), ("aq", d.aq)) if r and r.failures},
        )
        for name, d in result.dimensions.items()
    }
    return GeniusScores(
        overall=_rounded(result.overall),
        rc=_rounded(result.rc.mean),
        vc=_rounded(result.vc.mean),
        aq=_rounded(result.aq.mean),
        dimensions=dimensions,
        cases=len(records),
        scored=Metrics(rc=result.rc.scored, vc=result.vc.scored, aq=result.aq.scored),
        applicable=_applicable(records),
        complete=result.complete,
        judge_failures=FailuresByMetric(rc=result.rc.failures, vc=result.vc.failures, aq=result.aq.failures),
        missing_outputs=result.missing_outputs,
        unscored=dict(sorted(Counter(r["unscored"] for r in records if r.get("item") is None).items())),
        weights=dict(scoring.OVERALL_WEIGHTS),
        scale=scoring.SCALE,
        judge_rounds=o.judge_rounds,
        input_format=o.input_format.value,
        vc_counted_as_zero=result.vc_counted_as_zero,
        official_equivalent=_official_equivalent(records),
        deviations=deviations(records),
        reflection=_reflection_summary(records, o) if o.reflection_rounds else None,
        probe=_probe_summary(records) if o.vqa_probe else None,
    )


def headline_parts(records: Sequence[Mapping[str, Any]]) -> HeadlineParts:
    """Overall = 0.6·RC + 0.35·VC + 0.05·AQ over the pooled items: a case's item adds each metric
    that applies to it (its mark and a count of one; a judge failure adds neither), a case without
    an item adds nothing. With no VC at all, VC counts as 0, as `scoring.summarize` has it."""
    cases = []
    for record in records:
        terms: dict[str, tuple[float, float]] = {}
        if record.get("item") is not None:
            item = scoring.score_item(record["item"])
            for metric in scoring.OVERALL_WEIGHTS:  # rc, vc, aq
                mark = getattr(item, metric)
                if mark is not None:  # None: VC does not apply to this case
                    terms[metric] = (0.0, 0.0) if isinstance(mark, scoring.JudgeFailure) else (float(mark), 1.0)
        cases.append(terms)
    weights = dict(scoring.OVERALL_WEIGHTS)
    if not any("vc" in terms for terms in cases):
        del weights["vc"]
    return HeadlineParts(weights, cases)


def why_no_overall(s: GeniusScores) -> str | None:
    """The Overall weighs RC, VC and AQ, so it is empty when one of them has no scored case (VC
    only when its judge failed: with no VC task at all, VC counts as 0 as in the official script)."""
    if s.overall is not None:
        return None
    empty = [m for m in scoring.METRICS if getattr(s, m) is None and (m != "vc" or not s.vc_counted_as_zero)]
    failures: Counter[str] = Counter()
    for metric in empty:
        failures.update(getattr(s.judge_failures, metric))
    why = []
    if failures:
        why.append("judge failures: " + ", ".join(f"{kind} {n}" for kind, n in sorted(failures.items())))
    if s.unscored:
        why.append("cases with nothing to score: " + ", ".join(f"{reason} {n}" for reason, n in s.unscored.items()))
    return f"no case was scored on {', '.join(m.upper() for m in empty)}" + (f" ({'; '.join(why)})" if why else "")


def _applicable(records: Sequence[Mapping[str, Any]]) -> Metrics:
    """Cases each metric applies to: RC and AQ every case, VC a case with a reference image to keep
    (official ``has_vc_task``), read from its item or, for a case left unscored, from its hints. A
    metric that does not apply is not a missing score."""
    return Metrics(rc=len(records), vc=sum(_has_vc_task(r) for r in records), aq=len(records))


def _has_vc_task(record: Mapping[str, Any]) -> bool:
    item = record.get("item")
    if item is not None:
        return bool(item["vc_task"]) if item.get("vc_task") is not None else item["vc_hints"] > 0
    if record.get("rounds"):
        return any(h["reference"] is not None for h in record["rounds"][0]["vc"])
    return bool(record.get("vc_hints"))


def _official_equivalent(records: Sequence[Mapping[str, Any]]) -> OfficialEquivalent:
    """The same runs scored as the official scripts would score the judges' replies: every reply read
    by the official parser, a failed generation scored 0 on every metric (the script finds no image),
    and an item whose judge left no reply at all dropped (the script skips it)."""
    items: list[Any] = []
    dropped = 0
    for record in records:
        if record.get("official_item") is not None:
            items.append(record["official_item"])
        elif record.get("item") is None:
            items.append(_missing_output(record))
        else:
            dropped += 1
    result = scoring.summarize(items)
    return OfficialEquivalent(
        overall=_rounded(result.overall),
        rc=_rounded(result.rc.mean),
        vc=_rounded(result.vc.mean),
        aq=_rounded(result.aq.mean),
        items=len(items),
        dropped=dropped,
    )


def _missing_output(record: Mapping[str, Any]) -> dict[str, Any]:
    """A case with no image, as the official script scores it: 0 on every metric that applies."""
    hints = record["rounds"][0]["vc"] if record.get("rounds") else []
    return {
        "dimension": record["dimension"],
        "id": record["id"],
        "vc_hints": len(record["vc_hints"]),
        "vc_task": any(h["reference"] is not None for h in hints),
        "output_missing": True,
    }


def _rounded(value: float | None) -> float | None:
    return round(value, 4) if value is not None else None


def _reflection_summary(records: Sequence[Mapping[str, Any]], o: GeniusOptions) -> ReflectionScores:
    """Scores as they stood after each round (a case that stopped keeps its last score), how many
    rounds each case ran, and how many stopped early because RC reached 2."""
    by_round = []
    for k in range(o.reflection_rounds + 1):
        items, running = [], 0
        for record in records:
            ran = [r for r in record["rounds"][: k + 1] if r["ran"]]
            if ran and ran[-1]["item"] is not None:
                items.append(ran[-1]["item"])
            running += bool(ran) and ran[-1]["round"] == k
        result = scoring.summarize(items)
        by_round.append(
            RoundScores(
                round=k,
                overall=_rounded(result.overall),
                rc=_rounded(result.rc.mean),
                vc=_rounded(result.vc.mean),
                aq=_rounded(result.aq.mean),
                cases_running=running,
            )
        )
    rounds_run = Counter(sum(r["ran"] for r in record["rounds"]) for record in records)
    stopped = sum(any(r["status"] == "skipped" for r in record["rounds"]) for record in records)
    return ReflectionScores(
        critic=o.critic,
        max_rounds=o.reflection_rounds,
        rounds_run={str(n): rounds_run[n] for n in sorted(rounds_run)},
        stopped_early=stopped,
        by_round=by_round,
    )


def _probe_summary(records: Sequence[Mapping[str, Any]]) -> ProbeScores:
    """Probe accuracy overall and per dimension, beside chance, and crossed with the final RC so a
    reader sees whether knowing the answer goes with drawing it."""

    def tally(subset: Sequence[Mapping[str, Any]]) -> ProbeTally:
        probes = [r["probe"] for r in subset if r.get("probe")]
        answered = [p for p in probes if p["correct"] is not None]
        correct = sum(p["correct"] for p in answered)
        return ProbeTally(
            accuracy=_rounded(100.0 * correct / len(answered)) if answered else None,
            answered=len(answered),
            correct=correct,
            failed=sum(p["status"] not in ("done", "unavailable") for p in probes),
            unavailable=sum(p["status"] == "unavailable" for p in probes),
        )

    versus: dict[str, dict[str, int]] = {}
    for record in records:
        probe = record.get("probe") or {}
        verdicts: dict[Any, str] = {True: "correct", False: "wrong"}
        row = verdicts.get(probe.get("correct"), "not answered")
        cell = versus.setdefault(row, {"rc_full": 0, "rc_partial": 0, "rc_unscored": 0})
        rc = (record.get("scores") or {}).get("rc")
        if isinstance(rc, (int, float)):
            cell["rc_full" if rc == 100 else "rc_partial"] += 1
        else:
            cell["rc_unscored"] += 1
    chance = [1 / len(r["probe"]["options"]) for r in records if r.get("probe") and r["probe"]["options"]]
    return ProbeScores(
        **dict(tally(records)),
        chance=_rounded(100.0 * fmean(chance)) if chance else None,
        dimensions={d: tally(mine) for d in DIMENSIONS if (mine := [r for r in records if r["dimension"] == d])},
        versus_rc=versus,
    )


Table = tuple[str, list[str], list[list[Any]]]


def score_tables(summary: dict[str, Any]) -> list[Table]:
    """Main table in the paper's column order, then per dimension, failures, reflection and probe."""
    s = summary["scores"]
    model = summary.get("bindings", {}).get(GENERATE, "model")
    header = ["Model", "Overall"]
    row: list[Any] = [model, s["overall"]]
    for name in DIMENSIONS:
        d = s["dimensions"].get(name, {})
        for metric in scoring.METRICS:
            header.append(f"{DIMENSION_TITLES[name]} {metric.upper()}")
            row.append("-" if metric == "vc" and name in DIMENSIONS_WITHOUT_VC else d.get(metric))
    by_dimension = [
        [DIMENSION_TITLES[n], d["items"], d["rc"], d["vc"], d["aq"], d["missing_outputs"], _failure_text(d["judge_failures"])]
        for n, d in s["dimensions"].items()
    ]
    pooled = [s["cases"], s["rc"], s["vc"], s["aq"], s["missing_outputs"], _failure_text(s["judge_failures"])]
    by_dimension.append(["All (data-weighted)", *pooled])
    failures = [[f"{m.upper()} judge failure ({kind})", n] for m in scoring.METRICS for kind, n in s["judge_failures"][m].items()]
    failures.append(["missing output (scored 0, as officially)", s["missing_outputs"]])
    failures += [[f"unscored: {reason}", n] for reason, n in s["unscored"].items()]
    tables: list[Table] = [
        ("GENIUS main table (0-100; Overall = 0.6·RC + 0.35·VC + 0.05·AQ)", header, [row]),
        ("By dimension", ["Dimension", "Cases", "RC", "VC", "AQ", "Missing outputs", "Judge failures"], by_dimension),
        ("Failures (counted apart from the scores)", ["What", "Cases"], failures),
    ]
    if "reflection" in s:
        r = s["reflection"]
        rows = [[f"after round {x['round']}", x["overall"], x["rc"], x["vc"], x["aq"], x["cases_running"]] for x in r["by_round"]]
        title = f"Post-reflection (critic: {r['critic']}; stopped early: {r['stopped_early']} case(s))"
        tables.append((title, ["Score", "Overall", "RC", "VC", "AQ", "Cases that ran this round"], rows))
    if "probe" in s:
        p = s["probe"]
        rows = [[DIMENSION_TITLES[n], v["accuracy"], v["answered"], v["failed"]] for n, v in p["dimensions"].items()]
        rows.append(["All", p["accuracy"], p["answered"], p["failed"]])
        title = "VQA probe accuracy (knows what to draw; apart from generation scores)"
        tables.append((title, ["Dimension", "Accuracy", "Answered", "Failed"], rows))
        tables.append(
            (
                "Probe vs. Rule Compliance (final round)",
                ["Probe", "RC 2 (100)", "RC below 2", "RC not scored"],
                [[k, v["rc_full"], v["rc_partial"], v["rc_unscored"]] for k, v in p["versus_rc"].items()],
            )
        )
    return tables


def _failure_text(failures: dict[str, dict[str, int]]) -> str:
    parts = [f"{m.upper()} {kind} {n}" for m, kinds in failures.items() for kind, n in kinds.items()]
    return ", ".join(parts) or "none"
