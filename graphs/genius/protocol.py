"""GENIUS as an umni protocol: one graph per case, records per case, the paper's table.

Graph of one case (node ids; ``j`` is the judge round 0..judge_rounds-1, ``h`` the vc_hint):

    plan                     respond, understand   plan=true: the model writes a plan from the context
    round0/image             generate              context in the chosen input format (+ hints, + plan)
    round0/rc/j              judge                 Rule Compliance against the rc_hint
    round0/aq/j              judge                 Aesthetic Quality
    round0/vch/pixels        compute               is the output an exact pixel copy of hint h's reference?
    round0/vch/copy/j        judge                 ``Copy: 0|1``; skipped when the pixels already say copy
    round0/vch/j             judge                 Visual Consistency; skipped when the output is a copy
    round0/critique          respond               reflection only: judge or model feedback on round 0
    round1/image ...         generate              reflection only: input + previous image + feedback
    probe                    answer, understand    vqa_probe=true: the task as a 4-way question

**Copy check.** Two checks, and either one makes a hint's VC 0 without reading its VC rounds: a
compute node compares pixels (an exact copy can never be scored by trusting a judge), and the judge
answers ``Copy`` in `judge_rounds` rounds (round of their mean) for copies that are resized or
recompressed. The judge's copy rounds run only when the pixels do not already decide, and the VC
rounds only when neither check says copy. A copy check that cannot decide (a judge failure) makes
that hint's VC a counted failure, and its VC rounds are skipped rather than judged in vain.
``copy_judge=false`` keeps only the pixel check.

**Post-reflection.** Rounds are unrolled: after round k the critique node and round k+1 run only
while round k's Rule Compliance mark (round of the mean of its judge rounds) is below 2; an RC that
could not be read does not count as 2, so reflection goes on. Skipped rounds stay in the record as
skipped. Every round that ran is judged in full (RC, VC, AQ) and kept; the case's score is that of
the last round that ran, which is what a user of the loop would keep. With ``critic=judge`` the
feedback comes from the judge, who knows the rc_hint, so gold information reaches the generator;
``critic=self`` asks the model itself (understand role) and gives no such help.

**Failures.** A judge answer outside the format is retried by the engine and then recorded as a
parse failure: that metric of that case is counted under ``judge_failures`` and left out of the
mean, never scored 0. An output that is missing because the model returned a degenerate image
scores 0 as in the official code and is also counted (``missing_outputs``). A generation that failed
for other reasons (backend errors after retries, a blocked input) is not a model answer at all: the
case is left unscored and counted under ``unscored``. Cases whose context images are missing are
skipped at load time with the list of missing files.

**VQA probe.** The task recast as a multiple-choice question (context only; no hints, no plan):
the right option is the case's rc_hint, three distractors are other cases' rc_hints chosen
deterministically (see `prompts.probe_choices`). Its accuracy is reported apart from the generation
scores, to separate knowing what to draw from drawing it.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from statistics import fmean
from typing import Any, Literal

from PIL import Image
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from umni.artifacts import encode_png
from umni.errors import InputError
from umni.graph import Graph, ImageFile, PromptPart, Ref
from umni.outcomes import Outcome
from umni.protocol import CaseSet, Protocol, Skipped, View, node_status
from umni.roles import GENERATE, JUDGE, UNDERSTAND, option_letter

from . import prompts as P
from . import scoring
from .cases import DATA_FILE, DIMENSIONS, DIMENSIONS_WITHOUT_VC, GeniusCase, GeniusRecord, load_dataset

DIMENSION_TITLES = {
    "implicit_pattern": "Implicit Pattern",
    "symbolic_constraint": "Symbolic Constraint",
    "visual_constraint": "Visual Constraint",
    "prior_conflicting": "Prior-Conflicting",
    "multi_semantic": "Multi-Semantic",
}
METRICS = ("rc", "vc", "aq")
PLAN_NODE = "plan"
PROBE_NODE = "probe"
#: Bump when the pixel comparison changes what it returns.
PIXEL_CHECK_VERSION = "1"


class GeniusOptions(BaseModel):
    """``--option`` fields. The defaults reproduce the official evaluation."""

    model_config = ConfigDict(extra="forbid")

    input_format: P.InputFormat = Field(P.InputFormat.INTERLEAVED, description="edit, interleaved or fine_grained")
    plan: bool = Field(False, description="pre-planning: the model writes a plan before generating")
    reflection_rounds: int = Field(0, ge=0, le=5, description="post-reflection: extra generate rounds after feedback")
    critic: Literal["judge", "self"] = Field("judge", description="who writes the reflection feedback")
    hints: Literal["none", "text", "multimodal"] = Field("none", description="hints appended to the generation input")
    vqa_probe: bool = Field(False, description="also ask the task as a multiple-choice question")
    judge_rounds: int = Field(3, ge=1, le=9, description="judge calls per metric; the item mark is round(mean)")
    copy_judge: bool = Field(True, description="ask the judge 'Copy: 0|1' besides the exact pixel check")


@dataclass
class GeniusTask:
    """A loaded case plus what the run needs beyond the record: the VQA probe's options."""

    case: GeniusCase
    probe_options: list[str]
    probe_answer: int

    @property
    def key(self) -> str:
        return self.case.key



# ------------------------------------------------------------------------------ node functions
# Module-level so that the names entering cache keys are stable.


def parse_rule_compliance(text: str) -> int:
    return P.parse_judge_answer(text, "rc")


def parse_visual_consistency(text: str) -> int:
    return P.parse_judge_answer(text, "vc")


def parse_aesthetic_quality(text: str) -> int:
    return P.parse_judge_answer(text, "aq")


def parse_copy(text: str) -> int:
    return P.parse_judge_answer(text, "copy")


class PixelCopyCheck:
    """Compute-node function comparing an output with one fixed reference file.

    The reference is captured, not a graph input (case files are not nodes), so the node's
    `version` names the file's content hash: a changed reference never reuses a cached verdict.
    """

    def __init__(self, reference: Path) -> None:
        self.reference = reference
        self.__qualname__ = "PixelCopyCheck"

    def __call__(self, output: Image.Image) -> dict[str, Any]:
        with Image.open(self.reference) as reference:
            reference.load()
            return scoring.pixel_copy(output, reference)


def needs_another_round(**rc_rounds: int | None) -> bool:
    """Reflection goes on unless the round's Rule Compliance mark is known to be 2."""
    values = list(rc_rounds.values())
    if any(v is None for v in values):
        return True
    return scoring.metric_mark(values) < 2  # type: ignore[operator]


def not_a_pixel_copy(pixels: dict[str, Any] | None) -> bool:
    return pixels is not None and not pixels["copy"]


def visual_consistency_needed(pixels: dict[str, Any] | None, **copy_rounds: int | None) -> bool:
    """VC is judged only when both copy checks have decided that the output is not a copy."""
    if not not_a_pixel_copy(pixels):
        return False
    values = list(copy_rounds.values())
    if any(v is None for v in values):
        return False
    return not values or scoring.copy_verdict(values) is False  # type: ignore[arg-type]


def _node(round_index: int, name: str) -> str:
    return f"round{round_index}/{name}"


def _graph_parts(parts: list[P.Part]) -> list[PromptPart]:
    return [ImageFile(p) if isinstance(p, Path) else p for p in parts]


@lru_cache(maxsize=4096)
def _file_digest(path: str, mtime_ns: int, size: int) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@lru_cache(maxsize=4096)
def _stored_digest(path: str, mtime_ns: int, size: int) -> str:
    """The hash under which the runner stores a case image (its PNG re-encoding), for report views."""
    with Image.open(path) as image:
        image.load()
        return hashlib.sha256(encode_png(image)).hexdigest()


def _stat_key(path: Path) -> tuple[str, int, int]:
    stat = path.stat()
    return str(path), stat.st_mtime_ns, stat.st_size


def _dataset_location(path: Path) -> tuple[Path, list[str] | None]:
    """The dataset root and dimensions for a --cases path: the dataset folder, one dimension's
    folder, or one dimension's test_data.json."""
    if path.is_file():
        if path.name != DATA_FILE:
            raise InputError(f"expected a GENIUS dataset folder, a dimension folder or a {DATA_FILE}", path=path)
        return path.parent.parent, [path.parent.name]
    if (path / DATA_FILE).is_file():
        return path.parent, [path.name]
    return path, None


def _options(options: BaseModel) -> GeniusOptions:
    return options if isinstance(options, GeniusOptions) else GeniusOptions.model_validate(options.model_dump())


# ------------------------------------------------------------------------------ the protocol


class Genius(Protocol[GeniusTask]):
    name = "genius"
    title = "GENIUS generative fluid intelligence"
    roles = (GENERATE, JUDGE)
    Options = GeniusOptions

    def case_schema(self) -> dict[str, Any]:
        """A case file (``<dimension>/test_data.json``) is a list of records; a task is built from one."""
        return TypeAdapter(list[GeniusRecord]).json_schema()

    def judgements(self, record: dict[str, Any]) -> dict[str, float | None]:
        """The final round's RC, VC and AQ marks (0–100) of a case, for judge agreement."""
        scores = record.get("scores") or {}
        return {metric: scores.get(metric) for metric in ("rc", "vc", "aq")}

    def bundled_cases(self) -> Path:
        from umni_cases import bundled

        return bundled("genius") / "dataset"

    def load(self, path: Path, options: BaseModel) -> CaseSet[GeniusTask]:
        root, dimensions = _dataset_location(Path(path))
        dataset = load_dataset(root, dimensions)
        missing: dict[str, list[Path]] = {}
        for key, image in dataset.missing_images:
            missing.setdefault(key, []).append(image)
        tasks: list[GeniusTask] = []
        skipped: list[Skipped] = []
        for case in dataset.cases:
            if case.key in missing:
                names = ", ".join(_shown_path(p, root) for p in missing[case.key])
                skipped.append(Skipped(case.key, f"missing context image file(s): {names}"))
                continue
            choices, answer = P.probe_choices(case, dataset.cases)
            tasks.append(GeniusTask(case, choices, answer))
        return CaseSet(path=Path(path), cases=tasks, skipped=skipped)

    def case_id(self, case: GeniusTask) -> str:
        return case.key

    # -------------------------------------------------------------------------- graph
    def build(self, case: GeniusTask, options: BaseModel) -> Graph:
        o = _options(options)
        task = case.case
        g = Graph(case.key)
        context = _graph_parts(P.generation_input(task, o.input_format))
        given = context + _graph_parts(P.hint_parts(task, o.hints))
        plan_parts: list[PromptPart] = []
        if o.plan:
            plan = g.respond(PLAN_NODE, [*given, P.plan_request()], role=UNDERSTAND)
            plan_parts = [P.PLAN_HEADING, plan]
        image = g.generate(_node(0, "image"), [*given, *plan_parts])
        rc = self._judge_round(g, task, 0, image, o)
        for k in range(1, o.reflection_rounds + 1):
            previous_rc = {f"rc{j}": ref.maybe() for j, ref in enumerate(rc)}
            if o.critic == "judge":
                critique = g.respond(_node(k - 1, "critique"), [image, P.judge_critique_prompt(task.rc_hint)], role=JUDGE)
            else:
                critique = g.respond(_node(k - 1, "critique"), [*given, image, P.self_critique_request()], role=UNDERSTAND)
            g.when(critique, needs_another_round, **previous_rc)
            retry_parts = [P.PREVIOUS_ATTEMPT, image, P.FEEDBACK_HEADING, critique, P.REGENERATE_REQUEST]
            image = g.generate(_node(k, "image"), [*given, *plan_parts, *retry_parts])
            g.when(image, needs_another_round, **previous_rc)
            rc = self._judge_round(g, task, k, image, o)
        if o.vqa_probe and len(case.probe_options) > 1:
            g.answer(PROBE_NODE, [*context, P.PROBE_QUESTION], case.probe_options, role=UNDERSTAND)
        return g

    def _judge_round(self, g: Graph, task: GeniusCase, k: int, image: Ref, o: GeniusOptions) -> list[Ref]:
        """Every judge node of one round; returns the Rule Compliance refs (reflection reads them)."""
        repeats = range(o.judge_rounds)
        rc_prompt = P.rule_compliance_prompt(task.rc_hint)
        rc = [g.judge(_node(k, f"rc/{j}"), [image, rc_prompt], parse_rule_compliance, repeat=j) for j in repeats]
        for j in repeats:
            g.judge(_node(k, f"aq/{j}"), [image, P.aesthetic_quality_prompt()], parse_aesthetic_quality, repeat=j)
        for h, hint in enumerate(task.vc_hints):
            reference_path = hint.reference.path
            reference = ImageFile(reference_path)
            version = f"{PIXEL_CHECK_VERSION}:{_file_digest(*_stat_key(reference_path))[:16]}"
            pixels = g.compute(_node(k, f"vc{h}/pixels"), PixelCopyCheck(reference_path), version=version, output=image)
            copies: list[Ref] = []
            if o.copy_judge:
                for j in repeats:
                    copy = g.judge(_node(k, f"vc{h}/copy/{j}"), [reference, image, P.copy_check_prompt()], parse_copy, repeat=j)
                    g.when(copy, not_a_pixel_copy, pixels=pixels.maybe())
                    copies.append(copy)
            vc_prompt = P.visual_consistency_prompt(hint.text)
            decided = {f"copy{i}": ref.maybe() for i, ref in enumerate(copies)}
            for j in repeats:
                vc = g.judge(_node(k, f"vc{h}/{j}"), [reference, image, vc_prompt], parse_visual_consistency, repeat=j)
                g.when(vc, visual_consistency_needed, pixels=pixels.maybe(), **decided)
        return rc

    # -------------------------------------------------------------------------- records
    def record(self, case: GeniusTask, outcomes: dict[str, Outcome], options: BaseModel) -> dict[str, Any]:
        o = _options(options)
        task = case.case
        rounds = [_round_record(task, k, outcomes, o) for k in range(o.reflection_rounds + 1)]
        ran = [r for r in rounds if r["ran"]]
        final = ran[-1] if ran else None
        if final is None:
            first = outcomes[_node(0, "image")]
            unscored: str | None = f"generation {first.status}: an input it needs did not finish"
        else:
            unscored = final["unscored"]
        return {
            "case_id": case.key,
            "dimension": task.dimension,
            "id": task.id,
            "context": task.context,
            "instruction": task.instruction,
            "rc_hint": task.rc_hint,
            "vc_hints": [hint.text for hint in task.vc_hints],
            "context_images": [_context_image(ref.name, ref.path) for ref in task.context_images],
            "plan": _text_record(outcomes.get(PLAN_NODE)),
            "rounds": rounds,
            "final_round": final["round"] if final else None,
            "item": final["item"] if final else None,
            "scores": final["scores"] if final else None,
            "unscored": unscored,
            "probe": _probe_record(case, outcomes.get(PROBE_NODE)) if o.vqa_probe else None,
            "nodes": node_status(outcomes),
        }

    # -------------------------------------------------------------------------- scores
    def summarize(self, records: list[dict[str, Any]], options: BaseModel) -> dict[str, Any]:
        o = _options(options)
        items = [r["item"] for r in records if r.get("item") is not None]
        result = scoring.summarize(items)
        dimensions = {
            name: {
                "items": d.items,
                "missing_outputs": d.missing_outputs,
                "rc": _pct(d.rc.mean),
                "vc": _pct(d.vc.mean) if d.vc else None,
                "aq": _pct(d.aq.mean),
                "judge_failures": {m: r.failures for m, r in (("rc", d.rc), ("vc", d.vc), ("aq", d.aq)) if r and r.failures},
            }
            for name, d in result.dimensions.items()
        }
        summary: dict[str, Any] = {
            "overall": _pct(result.overall),
            "rc": _pct(result.rc.mean),
            "vc": _pct(result.vc.mean),
            "aq": _pct(result.aq.mean),
            "dimensions": dimensions,
            "cases": len(records),
            "scored": {"rc": result.rc.scored, "vc": result.vc.scored, "aq": result.aq.scored},
            "judge_failures": {"rc": result.rc.failures, "vc": result.vc.failures, "aq": result.aq.failures},
            "missing_outputs": result.missing_outputs,
            "unscored": dict(sorted(Counter(r["unscored"] for r in records if r.get("item") is None).items())),
            "weights": dict(scoring.OVERALL_WEIGHTS),
            "scale": scoring.SCALE,
            "judge_rounds": o.judge_rounds,
            "input_format": o.input_format.value,
        }
        if o.reflection_rounds:
            summary["reflection"] = _reflection_summary(records, o)
        if o.vqa_probe:
            summary["probe"] = _probe_summary(records)
        return summary

    def tables(self, summary: dict[str, Any]) -> list[tuple[str, list[str], list[list[Any]]]]:
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
        tables: list[tuple[str, list[str], list[list[Any]]]] = [
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

    def views(self, record: dict[str, Any]) -> list[View]:
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


# ------------------------------------------------------------------------------ record helpers


def _shown_path(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root.resolve()))
    except ValueError:
        return str(path)


def _context_image(name: str, path: Path) -> dict[str, Any]:
    try:
        digest: str | None = _stored_digest(*_stat_key(path))
    except (OSError, ValueError):
        digest = None
    return {"name": name, "image": digest}


def _status(outcome: Outcome | None) -> str:
    if outcome is None:
        return "absent"
    return "done" if outcome.ok else outcome.status


def _failure(outcome: Outcome | None) -> dict[str, Any] | None:
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


def _as_round(judgement: dict[str, Any]) -> int | scoring.JudgeFailure:
    if judgement["status"] == "done":
        return int(judgement["value"])
    failure = judgement["failure"]
    kind = failure["kind"] if failure else judgement["status"]
    return scoring.JudgeFailure(kind=kind, detail=(failure or {}).get("message", ""))


def _round_record(task: GeniusCase, k: int, outcomes: dict[str, Outcome], o: GeniusOptions) -> dict[str, Any]:
    made = outcomes[_node(k, "image")]
    ran = made.status not in ("skipped", "blocked")
    entry: dict[str, Any] = {
        "round": k,
        "status": _status(made),
        "ran": ran,
        "image": made.image.sha256 if made.image else None,
        "failure": _failure(made),
        "critique": _text_record(outcomes.get(_node(k, "critique"))),
        "rc": [_judgement(outcomes[_node(k, f"rc/{j}")]) for j in range(o.judge_rounds)],
        "aq": [_judgement(outcomes[_node(k, f"aq/{j}")]) for j in range(o.judge_rounds)],
        "vc": [],
        "item": None,
        "scores": None,
        "unscored": None,
    }
    for h, hint in enumerate(task.vc_hints):
        pixels = outcomes[_node(k, f"vc{h}/pixels")]
        entry["vc"].append(
            {
                "hint": hint.text,
                "reference": hint.reference.name,
                "pixels": pixels.value if pixels.ok else None,
                "pixels_status": _status(pixels),
                "copy": [_judgement(outcomes[_node(k, f"vc{h}/copy/{j}")]) for j in range(o.judge_rounds)] if o.copy_judge else [],
                "rounds": [_judgement(outcomes[_node(k, f"vc{h}/{j}")]) for j in range(o.judge_rounds)],
            }
        )
    if not ran:
        return entry
    if made.ok:
        item = scoring.GeniusItem(
            dimension=task.dimension,
            id=task.id,
            vc_hints=len(task.vc_hints),
            rc=[_as_round(j) for j in entry["rc"]],
            aq=[_as_round(j) for j in entry["aq"]],
            vc=[_hint_judgement(v) for v in entry["vc"]],
        )
    elif made.failure is not None and made.failure.kind == "degenerate":
        item = scoring.GeniusItem(dimension=task.dimension, id=task.id, vc_hints=len(task.vc_hints), output_missing=True)
    else:
        entry["unscored"] = f"generation failed ({made.failure.kind if made.failure else made.status})"
        return entry
    entry["item"] = item.model_dump(mode="json")
    entry["scores"] = _item_scores(scoring.score_item(item))
    return entry


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
    def shown(value: float | scoring.JudgeFailure | None) -> Any:
        if isinstance(value, scoring.JudgeFailure):
            return {"failure": value.kind}
        return value

    return {"rc": shown(score.rc), "vc": shown(score.vc), "aq": shown(score.aq), "output_missing": score.output_missing}


def _probe_record(task: GeniusTask, outcome: Outcome | None) -> dict[str, Any]:
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


# ------------------------------------------------------------------------------ summary helpers


def _pct(value: float | None) -> float | None:
    return round(value, 4) if value is not None else None


def _reflection_summary(records: list[dict[str, Any]], o: GeniusOptions) -> dict[str, Any]:
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
            {
                "round": k,
                "overall": _pct(result.overall),
                "rc": _pct(result.rc.mean),
                "vc": _pct(result.vc.mean),
                "aq": _pct(result.aq.mean),
                "cases_running": running,
            }
        )
    rounds_run = Counter(sum(r["ran"] for r in record["rounds"]) for record in records)
    stopped = sum(any(r["status"] == "skipped" for r in record["rounds"]) for record in records)
    return {
        "critic": o.critic,
        "max_rounds": o.reflection_rounds,
        "rounds_run": {str(n): rounds_run[n] for n in sorted(rounds_run)},
        "stopped_early": stopped,
        "by_round": by_round,
    }


def _probe_summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    def tally(subset: list[dict[str, Any]]) -> dict[str, Any]:
        probes = [r["probe"] for r in subset if r.get("probe")]
        answered = [p for p in probes if p["correct"] is not None]
        correct = sum(p["correct"] for p in answered)
        return {
            "accuracy": _pct(100.0 * correct / len(answered)) if answered else None,
            "answered": len(answered),
            "correct": correct,
            "failed": sum(p["status"] not in ("done", "unavailable") for p in probes),
            "unavailable": sum(p["status"] == "unavailable" for p in probes),
        }

    versus: dict[str, dict[str, int]] = {}
    for record in records:
        probe = record.get("probe") or {}
        row = {True: "correct", False: "wrong"}.get(probe.get("correct"), "not answered")
        cell = versus.setdefault(row, {"rc_full": 0, "rc_partial": 0, "rc_unscored": 0})
        rc = (record.get("scores") or {}).get("rc")
        if isinstance(rc, (int, float)):
            cell["rc_full" if rc == 100 else "rc_partial"] += 1
        else:
            cell["rc_unscored"] += 1
    chance = [1 / len(r["probe"]["options"]) for r in records if r.get("probe") and r["probe"]["options"]]
    return {
        **tally(records),
        "chance": _pct(100.0 * fmean(chance)) if chance else None,
        "dimensions": {d: tally(mine) for d in DIMENSIONS if (mine := [r for r in records if r["dimension"] == d])},
        "versus_rc": versus,
    }


def _failure_text(failures: dict[str, dict[str, int]]) -> str:
    parts = [f"{m.upper()} {kind} {n}" for m, kinds in failures.items() for kind, n in kinds.items()]
    return ", ".join(parts) or "none"


# ------------------------------------------------------------------------------ view helpers


def _shown_text(entry: dict[str, Any] | None, limit: int = 600) -> str:
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
        rows.append((f"copy check {h + 1}", f"pixels: {pixel_text}; judge: {_marks(vc['copy']) or 'off'}"))
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


PROTOCOL = Genius()
