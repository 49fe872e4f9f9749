"""The AEGIS graphs: the model acts on one of four tasks, then the DCE judge grades a checklist.

Per case (node ids in quotes):

* understanding: "answer" (respond, role understand) -> "judge";
* generation: "image" (generate) -> "judge"; editing: "image" (edit of the input images) -> "judge";
* interleaved: "answer" (respond: text with bare ``<image>`` markers, as the official GPT path
  writes it) -> for k = 1..max_images: "image{k}/prompt" (compute, runs only if the text has a k-th
  marker) -> "image{k}" (generate; with ``condition_on_previous`` it also sees images 1..k-1) ->
  "judge/output" (compute: the text with markers numbered) -> "judge".

Variants add nodes in front of the acting node: ``reasoning=plugin`` a "plan" (respond, bound to
``reasoning_role``) whose text is appended to the acting node's instruction; ``rewrite=self|cross``
a "rewrite" (respond, role understand for self, ``rewrite_role`` for cross) and "rewrite/text"
(compute: the rewrite without fences or labels), whose text replaces the prompt.

`build` returns the graph with `AegisHandles` (the judge, its input preparation, and the model's
answer, images, plan and rewrite); `record` reads outcomes through them, so the ids above only name
nodes in events, caches and the ``nodes`` of a record, and no code agrees on them by convention.

Failures: if any model-side node fails (or a node it needs does), the judge is blocked or skipped
and the case is an inference failure; if the judge's reply cannot be used after the engine's bounded
parse retries (wrong number of answers, not Y/N, no JSON), the case is an evaluation failure. Both
are counted beside the scores and never scored.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache, partial
from pathlib import Path
from typing import Any, Literal, NotRequired, TypedDict

from pydantic import BaseModel, ConfigDict, Field, model_validator

from umni.plugin import (
    EDIT,
    GENERATE,
    JUDGE,
    ROLE_INTERFACE,
    UNDERSTAND,
    CaseSet,
    Graph,
    HeadlineParts,
    ImageFile,
    InputError,
    Note,
    Outcome,
    PromptPart,
    Protocol,
    Ref,
    Skipped,
    Understander,
    View,
    check_image_file,
    encode_png,
    fingerprint,
    node_status,
    shown_missing,
)

from . import prompts as P
from . import scoring
from .cases import DOMAIN_GROUPS, REASONING_TYPES, TASKS, AegisCase, load_cases, resolve_image_path
from .deviations import deviations
from .prompts import ChecklistVerdict

#: Roles whose backends promise free-text replies, so they can write a plan or a rewrite.
TEXT_ROLES = tuple(role for role, interface in ROLE_INTERFACE.items() if interface is Understander)

JUDGE_NODE = "judge"
#: The prefix of the ids of the judge's input preparation (ids only name nodes; see `AegisHandles`).
JUDGE_SIDE = "judge"


@dataclass(frozen=True)
class AegisHandles:
    """What a record reads of a case's graph. The evaluation side is `judge` and `judge_inputs`
    (nodes preparing what the judge sees); every other node is the model's side."""

    judge: Ref
    judge_inputs: tuple[Ref, ...] = ()
    answer: Ref | None = None  # understanding and interleaved: the model's text
    images: tuple[Ref, ...] = ()  # generation and editing: one; interleaved: one per marker slot
    plan: Ref | None = None  # reasoning=plugin
    rewrite: Ref | None = None  # rewrite=self|cross: the cleaned rewritten prompt


@dataclass(frozen=True)
class _Made:
    """The nodes `build` makes on the way to `AegisHandles`, gathered step by step."""

    plan: Ref | None = None
    rewrite: Ref | None = None
    answer: Ref | None = None
    images: tuple[Ref, ...] = ()
    judge_inputs: tuple[Ref, ...] = ()


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


class AegisOptions(BaseModel):
    """Variants of the paper (``--option key=value``)."""

    model_config = ConfigDict(extra="forbid")

    prompt: Literal["prompt", "clear_prompt"] = Field("prompt", description="which instruction the model is given")
    reasoning: Literal["none", "plugin"] = Field("none", description="plugin: a reasoning node writes a plan first")
    reasoning_role: str = Field(UNDERSTAND, description="role that writes the plan (reasoning=plugin)")
    rewrite: Literal["none", "self", "cross"] = Field("none", description="rewrite the prompt into a clear one first")
    rewrite_role: str = Field(JUDGE, description="role that rewrites (rewrite=cross)")
    condition_on_previous: bool = Field(False, description="interleaved: each drawn image also sees the earlier ones")
    max_images: int = Field(6, ge=1, le=16, description="interleaved: most <image> markers drawn per answer")
    invert_negative: bool = Field(False, description="count Y on negatively phrased items as a fail (not the official score)")

    @model_validator(mode="after")
    def _coherent(self) -> AegisOptions:
        for name in ("reasoning_role", "rewrite_role"):
            if getattr(self, name) not in TEXT_ROLES:
                raise ValueError(f"{name} must be a role that writes text ({', '.join(TEXT_ROLES)}), got {getattr(self, name)!r}")
        if "reasoning_role" in self.model_fields_set and self.reasoning != "plugin":
            raise ValueError("reasoning_role applies only with reasoning=plugin")
        if "rewrite_role" in self.model_fields_set and self.rewrite != "cross":
            raise ValueError("rewrite_role applies only with rewrite=cross (self-rewrite uses the understand role)")
        if self.rewrite != "none" and self.prompt != "prompt":
            raise ValueError("rewrite starts from the reasoning prompt; it cannot be combined with prompt=clear_prompt")
        if self.rewrite != "none" and self.reasoning != "none":
            raise ValueError("choose one of rewrite and reasoning=plugin; the paper studies them apart")
        return self


class LocatedCase(AegisCase):
    """An AEGIS case that knows the folder its image paths are relative to."""

    folder: Path = Field(exclude=True)

    def image_path(self, relative: str) -> Path:
        return resolve_image_path(self.folder, relative)


# --------------------------------------------------------------------------------------------------
# Small functions the graph runs (module level, so their names are stable in cache keys)


def _marker_count(text: str | None) -> int:
    return P.count_draw_markers(text or "")


def _has_text(answer: str | None) -> bool:
    return bool(answer and answer.strip())


def _clean_rewrite(text: str) -> str:
    return P.parse_rewrite(text)


def _checklist_parser(n_items: int) -> Callable[[str], dict[str, list[str]]]:
    """The judge node's parse function: a `ParseFailure` (retried by the engine) unless the reply
    holds exactly `n_items` Y/N answers. Returns plain JSON so the cache can keep it."""

    def parse_checklist(text: str) -> dict[str, list[str]]:
        verdict = P.parse_judge_reply(text, n_items)
        return {"answers": list(verdict.letters), "reasons": list(verdict.reasons), "from_prose": verdict.from_prose}  # type: ignore[dict-item]

    return parse_checklist


def _numbered_answer(limit: int) -> Callable[[str], str]:
    """The judge-side view of an interleaved answer: markers numbered as the pictures that follow."""

    def numbered_answer(text: str) -> str:
        return P.number_draw_markers(text, limit)

    return numbered_answer


def _constants_version(**constants: Any) -> str:
    """A compute node's `version` that also names the case constants its function closes over.

    Compute cache keys hash the function's name and its input values, not the values a closure
    captured; two cases with equal inputs but different constants must not share a cached result.
    """
    return "1:" + fingerprint(constants)[:16]


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


# --------------------------------------------------------------------------------------------------


class Aegis(Protocol[AegisCase, AegisOptions, AegisResult, scoring.AegisScores]):
    name = "aegis"
    title = "AEGIS world-knowledge checklist evaluation"
    roles = (UNDERSTAND, GENERATE, EDIT, JUDGE)
    Options = AegisOptions

    def judgements(self, record: AegisResult) -> dict[str, float | None]:
        """The checklist score of a case (fraction of Y), for judge agreement."""
        return {"score": record.get("score")}

    def bundled_cases(self) -> Path:
        from umni_cases import bundled

        return bundled("aegis") / "annotation.json"

    # ------------------------------------------------------------------ loading
    def load(self, path: Path, options: AegisOptions) -> CaseSet[AegisCase]:
        file = path / "annotation.json" if path.is_dir() else path
        loaded = load_cases(file)
        notes = [Note(q.record, q.field, q.message) for q in loaded.quirks]
        cases: list[AegisCase] = []
        skipped: list[Skipped] = []
        for case in loaded.cases:
            missing_inputs = [p for p in case.input_image if not loaded.resolve_image(p).is_file()]
            missing_refs = [p for p in case.ref_image if not loaded.resolve_image(p).is_file()]
            reasons = []
            if missing_inputs:
                shown = (shown_missing(p, loaded.resolve_image(p)) for p in missing_inputs)
                reasons.append(f"missing input image(s): {', '.join(shown)}")
            if missing_refs:
                shown = (shown_missing(p, loaded.resolve_image(p)) for p in missing_refs)
                reasons.append(f"missing reference image(s): {', '.join(shown)}")
            if case.task == "editing" and not case.input_image:
                reasons.append("an editing case needs an input image and names none")
            if reasons:
                skipped.append(Skipped(str(case.id), "; ".join(reasons)))
                continue
            cases.append(LocatedCase.model_construct(**dict(case), folder=loaded.root))
        return CaseSet(path=file, cases=cases, skipped=skipped, notes=notes)

    def case_id(self, case: AegisCase) -> str:
        return str(case.id)

    # ------------------------------------------------------------------ graph
    def build(self, case: AegisCase, options: AegisOptions) -> Graph[AegisHandles]:
        return self._build(_located(case), options)

    def _build(self, case: LocatedCase, options: AegisOptions) -> Graph[AegisHandles]:
        g: Graph[AegisHandles] = Graph(str(case.id))
        inputs = [ImageFile(case.image_path(p)) for p in case.input_image]
        references = [ImageFile(case.image_path(p)) for p in case.ref_image]
        # An edit node takes its images apart from the instruction, which keeps the <imageN> text.
        shown = [] if case.task == "editing" else inputs
        instruction, request, model = self._instruction(g, case, options, inputs, shown)
        output: list[PromptPart]
        if case.task == "understanding":
            answer = g.respond("answer", instruction, max_tokens=1024)
            output = [answer]
            judge_when: tuple[Callable[..., bool], dict[str, Ref]] | None = (_has_text, {"answer": answer})
            model = replace(model, answer=answer)
        elif case.task == "generation":
            image = g.generate("image", instruction)
            output = ["(no text)", "Output image 1:", image]
            judge_when = None
            model = replace(model, images=(image,))
        elif case.task == "editing":
            image = g.edit("image", inputs, instruction)
            output = ["(no text)", "Output image 1:", image]
            judge_when = None
            model = replace(model, images=(image,))
        else:
            output, judge_when, (answer, images, numbered) = self._interleaved(g, case, options, inputs, instruction, request)
            model = replace(model, answer=answer, images=images, judge_inputs=(numbered,))
        parts: list[PromptPart] = [
            *P.judge_context(case, reference_images=references, input_images=inputs),
            "The model's output:",
            *output,
            P.judge_instructions(case),
        ]
        if case.task == "understanding":
            parts.insert(-1, "(no output image)")
        judge = g.judge(JUDGE_NODE, parts, _checklist_parser(len(case.checklist)), max_tokens=2048)
        if judge_when is not None:
            condition, named = judge_when
            g.when(judge, condition, **named)
        return g.with_handles(AegisHandles(judge, model.judge_inputs, model.answer, model.images, model.plan, model.rewrite))

    def _instruction(
        self, g: Graph[AegisHandles], case: AegisCase, options: AegisOptions, inputs: list[ImageFile], shown: list[ImageFile]
    ) -> tuple[list[PromptPart], Ref | None, _Made]:
        """The acting node's prompt parts, the rewritten request (a Ref) when there is one, and the
        plan or rewrite nodes made.

        `inputs` are the case's input images (the plan and rewrite nodes always see them); `shown`
        those that go into the acting node's prompt (none for an edit node, which gets them apart).
        """
        guide = case.task == "interleaved"
        if options.rewrite != "none":
            role = UNDERSTAND if options.rewrite == "self" else options.rewrite_role
            asked = [*P.labelled_images(inputs), P.rewrite_instruction(case)]
            raw = g.respond("rewrite", asked, role=role, max_tokens=1024)
            rewritten = g.compute("rewrite/text", _clean_rewrite, text=raw)
            lead: list[PromptPart] = [P.INTERLEAVED_MARKER_GUIDE] if guide else []
            return [*lead, *P.labelled_images(shown), rewritten], rewritten, _Made(rewrite=rewritten)
        if case.task == "editing":
            parts: list[PromptPart] = [P.model_prompt(case, options.prompt)]
        else:
            parts = list(P.model_parts(case, shown, options.prompt, marker_guide=guide))
        if options.reasoning == "plugin":
            asked = P.model_parts(case, inputs, options.prompt, instruction=P.plan_instruction(case, options.prompt))
            plan = g.respond("plan", asked, role=options.reasoning_role, max_tokens=1024)
            parts += [P.PLAN_HEADER, plan]
            return parts, None, _Made(plan=plan)
        return parts, None, _Made()

    def _interleaved(
        self,
        g: Graph[AegisHandles],
        case: AegisCase,
        options: AegisOptions,
        inputs: list[ImageFile],
        instruction: list[PromptPart],
        request: Ref | None,
    ) -> tuple[list[PromptPart], tuple[Callable[..., bool], dict[str, Ref]], tuple[Ref, tuple[Ref, ...], Ref]]:
        """The judge's view of the answer and its pictures, the judge's condition, and the answer,
        image and numbered-answer (judge side) nodes."""
        answer = g.respond("answer", instruction, max_tokens=1024)
        limit = options.max_images
        images: list[Ref] = []
        for k in range(limit):
            prompt = self._marker_prompt_node(g, case, options, k, answer, request)
            parts: list[PromptPart] = []
            if options.condition_on_previous and images:
                parts += [P.PREVIOUS_PICTURES_NOTE, *images]
            parts += [*P.labelled_images(inputs), prompt]
            images.append(g.generate(f"image{k + 1}", parts))
        shown = g.compute(
            f"{JUDGE_SIDE}/output", _numbered_answer(limit), version=_constants_version(limit=limit), text=answer
        )
        optional = {f"image{k + 1}": ref.maybe() for k, ref in enumerate(images)}

        def answer_complete(text: str | None, **drawn: Any) -> bool:
            """The judge runs only on a non-empty answer whose markers (up to the limit) all got a picture."""
            wanted = min(_marker_count(text), limit)
            return _has_text(text) and all(drawn[f"image{k + 1}"] is not None for k in range(wanted))

        return [shown, *optional.values()], (answer_complete, {"text": answer, **optional}), (answer, tuple(images), shown)

    def _marker_prompt_node(
        self, g: Graph[AegisHandles], case: AegisCase, options: AegisOptions, k: int, answer: Ref, request: Ref | None
    ) -> Ref:
        def needed(text: str | None, **_: Any) -> bool:
            return _marker_count(text) > k

        if request is None:
            fixed = P.model_prompt(case, options.prompt)

            def draw_prompt(text: str) -> str:
                return P.marker_image_prompt(case, text, k, request=fixed)

            return g.compute(f"image{k + 1}/prompt", draw_prompt, version=_constants_version(slot=k, request=fixed), when=needed, text=answer)

        def draw_rewritten(text: str, request: str) -> str:
            return P.marker_image_prompt(case, text, k, request=request)

        return g.compute(
            f"image{k + 1}/prompt", draw_rewritten, version=_constants_version(slot=k), when=needed, text=answer, request=request
        )

    # ------------------------------------------------------------------ records
    def record(self, case: AegisCase, outcomes: Mapping[str, Outcome], options: AegisOptions) -> AegisResult:
        located = _located(case)
        handles: AegisHandles = self.handles(located, outcomes, options)
        return self._record(located, outcomes, handles, options)

    def _record(self, case: LocatedCase, outcomes: Mapping[str, Outcome], handles: AegisHandles, options: AegisOptions) -> AegisResult:
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
                "markers": _marker_count(text) if case.task == "interleaved" and text is not None else None,
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

    # ------------------------------------------------------------------ summary
    def summarize(self, records: list[AegisResult], options: AegisOptions) -> scoring.AegisScores:
        results = [
            scoring.CaseResult(r["id"], r["task"], r["category"], r["reasoning_type"], r["status"], r["score"], r.get("detail", ""))
            for r in records
        ]
        s = scoring.summarize(results)
        official = scoring.summarize((row for r in records for row in _official_results(r)), rows=True)
        groups = tuple(DOMAIN_GROUPS)

        def row(by_group: dict[str, scoring.GroupStats], total: scoring.GroupStats) -> dict[str, float | None]:
            cells = {g: _pct(by_group[g].mean) if g in by_group else None for g in groups}
            return {**cells, "overall": _pct(total.mean), **_counts(total)}

        empty = scoring.group_stats([])
        main = {}
        for task in TASKS:
            cells = {g: s.by_task_and_group[f"{task}/{g}"] for g in groups if f"{task}/{g}" in s.by_task_and_group}
            main[task] = row(cells, s.by_task.get(task, empty))
        main["overall"] = row(s.by_domain_group, s.overall)
        return scoring.AegisScores(
            scale="percent: mean over scored cases of the fraction of checklist items answered Y",
            overall=_pct(s.overall.mean),
            main_table=main,
            by_task={k: _stats(v) for k, v in s.by_task.items()},
            by_domain_group={k: _stats(v) for k, v in s.by_domain_group.items()},
            by_category={k: _stats(v) for k, v in s.by_category.items()},
            by_reasoning_type={k: _stats(v) for k, v in s.by_reasoning_type.items()},
            by_task_and_category={
                task: {key.split("/", 1)[1]: _stats(v) for key, v in s.by_task_and_category.items() if key.startswith(f"{task}/")}
                for task in s.by_task
            },
            official_equivalent=scoring.OfficialEquivalent(
                overall=_pct(official.overall.mean),
                by_task={k: _pct(v.mean) for k, v in official.by_task.items()},
                cases=scoring.Counts(**_counts(official.overall)),
                stops=sum(1 for r in records if (r.get("official") or {}).get("stop")),
            ),
            deviations=deviations(records, s, official),
            cases=scoring.CaseCounts(total=len(records), **_counts(s.overall)),
            inference_failed_ids=s.inference_failed_ids,
            evaluation_failed_ids=s.evaluation_failed_ids,
            invert_negative=options.invert_negative,
        )

    def headline_parts(self, records: Sequence[AegisResult], options: AegisOptions) -> HeadlineParts:
        """Overall: the mean (as a percentage) over the scored cases of their checklist scores."""
        cases = [{"score": (100.0 * score, 1.0)} if r["status"] == "scored" and (score := r["score"]) is not None else {} for r in records]
        return HeadlineParts({"score": 1.0}, cases)

    def tables(self, summary: dict[str, Any]) -> list[tuple[str, list[str], list[list[Any]]]]:
        s = summary["scores"]
        groups = list(DOMAIN_GROUPS)
        counts = ["Scored", "Inference failures", "Evaluation failures"]
        main_rows = []
        for name, row in s["main_table"].items():
            label = "Overall" if name == "overall" else name.capitalize()
            main_rows.append([label, *(row[g] for g in groups), row["overall"], row["scored"], row["inference_failures"], row["evaluation_failures"]])
        category_group = {c: g for g, cats in DOMAIN_GROUPS.items() for c in cats}
        category_rows = [
            [c, category_group.get(c, "?"), v["score"], v["std"], v["scored"], v["inference_failures"], v["evaluation_failures"]]
            for c, v in s["by_category"].items()
        ]
        order = [t for t in REASONING_TYPES if t in s["by_reasoning_type"]] + sorted(set(s["by_reasoning_type"]) - set(REASONING_TYPES))
        reasoning_rows = [[t, s["by_reasoning_type"][t]["score"], *(s["by_reasoning_type"][t][k] for k in _COUNT_KEYS)] for t in order]
        return [
            ("AEGIS by task and domain (score ×100)", ["Task", *groups, "Overall", *counts], main_rows),
            ("By category", ["Category", "Domain", "Score", "Std", *counts], category_rows),
            ("By reasoning type", ["Reasoning type", "Score", *counts], reasoning_rows),
        ]

    def views(self, record: AegisResult) -> list[View]:
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


_COUNT_KEYS = ("scored", "inference_failures", "evaluation_failures")


def _pct(value: float | None) -> float | None:
    return None if value is None else round(100.0 * value, 2)


def _counts(stats: scoring.GroupStats) -> dict[str, int]:
    return {k: getattr(stats, k) for k in _COUNT_KEYS}


def _stats(stats: scoring.GroupStats) -> scoring.GroupScores:
    return scoring.GroupScores(score=_pct(stats.mean), std=_pct(stats.std), **_counts(stats))


def _located(case: AegisCase) -> LocatedCase:
    if not isinstance(case, LocatedCase):
        raise TypeError(f"AEGIS case {case.id}: build graphs from cases returned by PROTOCOL.load, which know their image folder")
    return case


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


def _official_results(record: Mapping[str, Any]) -> list[scoring.CaseResult]:
    """The rows the official scorer counts for the case (a copy marked failed before the written
    result, when the reply did not parse); none where the official scripts would stop on its reply.
    Records written before this reading existed keep umni's own status and score."""
    official = record.get("official") or {"status": record["status"], "score": record["score"]}
    if official.get("stop"):
        return []
    make = partial(scoring.CaseResult, record["id"], record["task"], record["category"], record["reasoning_type"])
    copies = [make("evaluation_failure", None) for _ in range(int(official.get("failure_copies", 0)))]
    return [*copies, make(official["status"], official["score"])]


def _judge_attempts(judge: Outcome | None) -> int | None:
    if judge is None:
        return None
    if judge.ok and judge.output:
        return int(judge.output.get("parse_attempts", 1))
    return judge.failure.attempts if judge.failure else None


PROTOCOL = Aegis()
