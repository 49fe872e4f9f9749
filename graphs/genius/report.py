"""What report.html shows for GENIUS: the paper's main table and its companions, and per-case views.

Both read only summary.json and results.jsonl records, so a report can be redrawn without a run.
Failures are always shown as failures ("parse failure (not scored)"), never as a 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from umni.plugin import GENERATE, View, option_letter

from .cases import DIMENSIONS, DIMENSIONS_WITHOUT_VC

DIMENSION_TITLES = {
    "implicit_pattern": "Implicit Pattern",
    "symbolic_constraint": "Symbolic Constraint",
    "visual_constraint": "Visual Constraint",
    "prior_conflicting": "Prior-Conflicting",
    "multi_semantic": "Multi-Semantic",
}
METRICS = ("rc", "vc", "aq")

Table = tuple[str, list[str], list[list[Any]]]


def score_tables(summary: dict[str, Any]) -> list[Table]:
    """Main table in the paper's column order, then per dimension, failures, reflection and probe."""
    s = summary["scores"]
    model = summary.get("bindings", {}).get(GENERATE, "model")
    header = ["Model", "Overall"]
    row: list[Any] = [model, s["overall"]]
    for name in DIMENSIONS:
        d = s["dimensions"].get(name, {})
        for metric in METRICS:
            header.append(f"{DIMENSION_TITLES[name]} {metric.upper()}")
            row.append("-" if metric == "vc" and name in DIMENSIONS_WITHOUT_VC else d.get(metric))
    by_dimension = [
        [DIMENSION_TITLES[n], d["items"], d["rc"], d["vc"], d["aq"], d["missing_outputs"], _failure_text(d["judge_failures"])]
        for n, d in s["dimensions"].items()
    ]
    pooled = [s["cases"], s["rc"], s["vc"], s["aq"], s["missing_outputs"], _failure_text(s["judge_failures"])]
    by_dimension.append(["All (data-weighted)", *pooled])
    failures = [[f"{m.upper()} judge failure ({kind})", n] for m in METRICS for kind, n in s["judge_failures"][m].items()]
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


def _failure_text(failures: dict[str, dict[str, int]]) -> str:
    parts = [f"{m.upper()} {kind} {n}" for m, kinds in failures.items() for kind, n in kinds.items()]
    return ", ".join(parts) or "none"


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
