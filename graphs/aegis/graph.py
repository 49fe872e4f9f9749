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

`build_case_graph` returns the graph with `AegisHandles` (the judge, its input preparation, and the
model's answer, images, plan and rewrite); records read outcomes through them, so the ids above only
name nodes in events, caches and the ``nodes`` of a record, and no code agrees on them by convention.

The functions the nodes run were first written in ``protocol.py`` (the drawing prompts' as closures
in a method of the protocol class); their module and qualified names enter their cache keys, so
each keeps that name (`umni_graphs.keyed.keyed_as`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from umni.plugin import UNDERSTAND, Graph, ImageFile, PromptPart, Ref, fingerprint

from ..keyed import keyed_as
from . import prompts as P
from .cases import AegisCase, LocatedCase, located
from .options import AegisOptions

JUDGE_NODE = "judge"
#: the judge's reply limit: a reason for every checklist item fits
JUDGE_MAX_TOKENS = 2048
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

#: The module the node functions below were first keyed under.
KEYED_MODULE = "umni_graphs.aegis.protocol"

# --------------------------------------------------------------------------------------------------
# Small functions the graph runs (their names enter cache keys: kept as first keyed)


def _marker_count(text: str | None) -> int:
    return P.count_draw_markers(text or "")


def _has_text(answer: str | None) -> bool:
    return bool(answer and answer.strip())


def _clean_rewrite(text: str) -> str:
    return P.parse_rewrite(text)


keyed_as(_clean_rewrite, KEYED_MODULE)


def _checklist_parser(n_items: int) -> Callable[[str], dict[str, list[str]]]:
    """The judge node's parse function: a `ParseFailure` (retried by the engine) unless the reply
    holds exactly `n_items` Y/N answers. Returns plain JSON so the cache can keep it."""

    def parse_checklist(text: str) -> dict[str, list[str]]:
        verdict = P.parse_judge_reply(text, n_items)
        return {"answers": list(verdict.letters), "reasons": list(verdict.reasons), "from_prose": verdict.from_prose}  # type: ignore[dict-item]

    return keyed_as(parse_checklist, KEYED_MODULE)


def _numbered_answer(limit: int) -> Callable[[str], str]:
    """The judge-side view of an interleaved answer: markers numbered as the pictures that follow."""

    def numbered_answer(text: str) -> str:
        return P.number_draw_markers(text, limit)

    return keyed_as(numbered_answer, KEYED_MODULE)


def _constants_version(**constants: Any) -> str:
    """A compute node's `version` that also names the case constants its function closes over.

    Compute cache keys hash the function's name and its input values, not the values a closure
    captured; two cases with equal inputs but different constants must not share a cached result.
    """
    return "1:" + fingerprint(constants)[:16]


# --------------------------------------------------------------------------------------------------


def build_case_graph(case: AegisCase, options: AegisOptions) -> Graph[AegisHandles]:
    return _case_graph(located(case), options)


def _case_graph(case: LocatedCase, options: AegisOptions) -> Graph[AegisHandles]:
    g: Graph[AegisHandles] = Graph(str(case.id))
    inputs = [ImageFile(case.image_path(p)) for p in case.input_image]
    references = [ImageFile(case.image_path(p)) for p in case.ref_image]
    # An edit node takes its images apart from the instruction, which keeps the <imageN> text.
    shown = [] if case.task == "editing" else inputs
    instruction, request, model = _instruction(g, case, options, inputs, shown)
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
        output, judge_when, (answer, images, numbered) = _interleaved(g, case, options, inputs, instruction, request)
        model = replace(model, answer=answer, images=images, judge_inputs=(numbered,))
    parts: list[PromptPart] = [
        *P.judge_context(case, reference_images=references, input_images=inputs),
        "The model's output:",
        *output,
        P.judge_instructions(case),
    ]
    if case.task == "understanding":
        parts.insert(-1, "(no output image)")
    judge = g.judge(JUDGE_NODE, parts, _checklist_parser(len(case.checklist)), max_tokens=JUDGE_MAX_TOKENS)
    if judge_when is not None:
        condition, named = judge_when
        g.when(judge, condition, **named)
    return g.with_handles(AegisHandles(judge, model.judge_inputs, model.answer, model.images, model.plan, model.rewrite))


def _instruction(
    g: Graph[AegisHandles], case: AegisCase, options: AegisOptions, inputs: list[ImageFile], shown: list[ImageFile]
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
        prompt = _marker_prompt_node(g, case, options, k, answer, request)
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
    g: Graph[AegisHandles], case: AegisCase, options: AegisOptions, k: int, answer: Ref, request: Ref | None
) -> Ref:
    def needed(text: str | None, **_: Any) -> bool:
        return _marker_count(text) > k

    if request is None:
        fixed = P.model_prompt(case, options.prompt)

        def draw_prompt(text: str) -> str:
            return P.marker_image_prompt(case, text, k, request=fixed)

        keyed_as(draw_prompt, KEYED_MODULE, "Aegis._marker_prompt_node.<locals>.draw_prompt")
        return g.compute(f"image{k + 1}/prompt", draw_prompt, version=_constants_version(slot=k, request=fixed), when=needed, text=answer)

    def draw_rewritten(text: str, request: str) -> str:
        return P.marker_image_prompt(case, text, k, request=request)

    keyed_as(draw_rewritten, KEYED_MODULE, "Aegis._marker_prompt_node.<locals>.draw_rewritten")
    return g.compute(
        f"image{k + 1}/prompt", draw_rewritten, version=_constants_version(slot=k), when=needed, text=answer, request=request
    )
