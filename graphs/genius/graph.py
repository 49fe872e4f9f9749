"""The graph of one GENIUS case: generation rounds, their judges, the copy checks, plan and probe.

Node ids (``k`` is the generation round, ``j`` the judge round 0..judge_rounds-1, ``h`` the vc_hint):

    plan                     respond, understand   plan=true: the model writes a plan from the context
    round0/image             generate              context in the chosen input format (+ hints, + plan)
    round0/rc/j              judge                 Rule Compliance against the rc_hint
    round0/aq/j              judge                 Aesthetic Quality
    round0/vch/pixels        compute               is the output an exact pixel copy of hint h's reference?
    round0/vch/copy          judge                 ``Copy: 0|1`` (0 = a copy, as officially), asked once
    round0/vch/j             judge                 Visual Consistency; skipped when the output is a copy
    round0/critique          respond               reflection only: judge or model feedback on round 0
    round1/image ...         generate              reflection only: input + previous image + feedback
    probe                    answer, understand    vqa_probe=true: the task as a 4-way question

**Copy check.** As in the official ``eval.py``, the judge is asked ``Copy`` once per hint that names a
reference image, hint by hint, stopping at the first copy; a copy for any hint makes the item's VC 0
and no VC round is judged. Before each judge question a compute node compares pixels (umni's
addition: an exact copy counts as one without trusting a judge). A check that cannot decide (a judge
failure) makes the item's VC a counted failure, and the VC rounds are skipped rather than judged in
vain. ``copy_judge=false`` keeps only the pixel check. Hints that name no image get no nodes: they
count 0 in every VC round, as officially.

**Post-reflection.** Rounds are unrolled: after round k the critique node and round k+1 run only
while round k's Rule Compliance mark (round of the mean of its judge rounds) is below 2; an RC that
could not be read does not count as 2, so reflection goes on. Skipped rounds stay in the record as
skipped. Every round that ran is judged in full (RC, VC, AQ) and kept; the case's score is that of
the last round that ran, which is what a user of the loop would keep. With ``critic=judge`` the
feedback comes from the judge, who knows the rc_hint, so gold information reaches the generator;
``critic=self`` asks the model itself (understand role) and gives no such help.

**VQA probe.** The task recast as a multiple-choice question (context only; no hints, no plan):
the right option is the case's rc_hint, three distractors are other cases' rc_hints chosen
deterministically (see `prompts.probe_choices`). Its accuracy is reported apart from the generation
scores, to separate knowing what to draw from drawing it.

The parsers and the pixel check are module-level: their module and qualified name (a node
parameter) and their code (umni.codeid: source, closure values, the globals they read) enter the
judge and compute nodes' cache keys. Editing them makes cached verdicts miss, and so would moving or
renaming them, unless the moved function keeps its name (`umni_graphs.keyed.keyed_as`);
reformatting them does not.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from PIL import Image

from umni.plugin import CRITIC, UNDERSTAND, Graph, ImageFile, PromptPart, Ref, check_image_file

from . import prompts as P
from . import scoring
from .cases import GeniusTask
from .dataset import GeniusCase
from .digests import file_sha256
from .options import GeniusOptions

PLAN_NODE = "plan"
PROBE_NODE = "probe"
#: Bump when the pixel comparison changes what it returns.
PIXEL_CHECK_VERSION = "1"


@dataclass(frozen=True)
class HintHandles:
    """The copy checks and Visual Consistency rounds of one vc_hint that names a reference image."""

    pixels: Ref
    copy: Ref | None  # None with copy_judge=false
    rounds: tuple[Ref, ...]


@dataclass(frozen=True)
class RoundHandles:
    """One generation round: its image, its judges, and the critique written on it (when a next
    round was planned). `vc` follows the case's vc_hints; None for a hint without an image."""

    image: Ref
    rc: tuple[Ref, ...]
    aq: tuple[Ref, ...]
    vc: tuple[HintHandles | None, ...]
    critique: Ref | None = None


@dataclass(frozen=True)
class GeniusHandles:
    """What a record reads of a case's graph: every round (skipped ones included), plan and probe."""

    rounds: tuple[RoundHandles, ...]
    plan: Ref | None = None
    probe: Ref | None = None


def round_node(round_index: int, name: str) -> str:
    """The id of a node that belongs to one generation round (ids name nodes in events and
    caches; records read nodes through `GeniusHandles`, never by id)."""
    return f"round{round_index}/{name}"


def build_case_graph(task: GeniusTask, o: GeniusOptions) -> Graph[GeniusHandles]:
    """Plan (optional), round 0 and its judges, then each reflection round gated on the previous
    round's Rule Compliance, then the probe (optional)."""
    case = task.case
    g: Graph[GeniusHandles] = Graph(task.key)
    context = _graph_parts(P.generation_input(case, o.input_format))
    given = context + _graph_parts(P.hint_parts(case, o.hints))
    plan_parts: list[PromptPart] = []
    plan: Ref | None = None
    if o.plan:
        plan = g.respond(PLAN_NODE, [*given, P.plan_request()], role=UNDERSTAND)
        plan_parts = [P.PLAN_HEADING, plan]
    image = g.generate(round_node(0, "image"), [*given, *plan_parts])
    rounds = [_add_round_judges(g, case, 0, image, o)]
    for k in range(1, o.reflection_rounds + 1):
        # The loop is steered by the critic role (default: the judge's backend), not by the scoring
        # judge: its own Rule Compliance verdicts (same prompt and parser, so with the default
        # binding they share the scoring judges' cache entries and cost no call) decide whether
        # round k runs, so re-scoring with another judge replays the same rounds.
        verdicts = _critic_verdicts(g, case, k - 1, image, o)
        previous_rc = {f"rc{j}": ref.maybe() for j, ref in enumerate(verdicts)}
        if o.critic == "judge":
            critique = g.respond(round_node(k - 1, "critique"), [image, P.judge_critique_prompt(case.rc_hint)], role=CRITIC)
        else:
            critique = g.respond(round_node(k - 1, "critique"), [*given, image, P.self_critique_request()], role=UNDERSTAND)
        g.when(critique, needs_another_round, **previous_rc)
        rounds[-1] = replace(rounds[-1], critique=critique)
        retry_parts: list[PromptPart] = [P.PREVIOUS_ATTEMPT, image, P.FEEDBACK_HEADING, critique, P.REGENERATE_REQUEST]
        image = g.generate(round_node(k, "image"), [*given, *plan_parts, *retry_parts])
        g.when(image, needs_another_round, **previous_rc)
        rounds.append(_add_round_judges(g, case, k, image, o))
    probe: Ref | None = None
    if o.vqa_probe and len(task.probe_options) > 1:
        probe = g.answer(PROBE_NODE, [*context, P.PROBE_QUESTION], task.probe_options, role=UNDERSTAND)
    return g.with_handles(GeniusHandles(tuple(rounds), plan=plan, probe=probe))


def _critic_verdicts(g: Graph, case: GeniusCase, k: int, image: Ref, o: GeniusOptions) -> list[Ref]:
    """The critic's Rule Compliance verdicts on round k, which gate round k + 1."""
    prompt = P.rule_compliance_prompt(case.rc_hint)
    return [
        g.judge(round_node(k, f"critic/rc/{j}"), [image, prompt], parse_rule_compliance, repeat=j, role=CRITIC)
        for j in range(o.judge_rounds)
    ]


def _add_round_judges(g: Graph[GeniusHandles], case: GeniusCase, k: int, image: Ref, o: GeniusOptions) -> RoundHandles:
    """Every judge node of one round, as the round's handles."""
    repeats = range(o.judge_rounds)
    rc_prompt = P.rule_compliance_prompt(case.rc_hint)
    rc = tuple(g.judge(round_node(k, f"rc/{j}"), [image, rc_prompt], parse_rule_compliance, repeat=j) for j in repeats)
    aq = tuple(
        g.judge(round_node(k, f"aq/{j}"), [image, P.aesthetic_quality_prompt()], parse_aesthetic_quality, repeat=j)
        for j in repeats
    )
    checks: dict[int, tuple[Ref, Ref | None]] = {}
    evidence: dict[str, Ref] = {}  # the copy checks so far, in hint order: later checks wait on them
    judged = [(h, hint.text, hint.reference.path) for h, hint in enumerate(case.vc_hints) if hint.reference is not None]
    for h, _, reference_path in judged:
        version = f"{PIXEL_CHECK_VERSION}:{file_sha256(reference_path)[:16]}"
        pixels = g.compute(round_node(k, f"vc{h}/pixels"), PixelCopyCheck(reference_path), version=version, output=image)
        here = {f"pixels{h}": pixels.maybe()}
        copy: Ref | None = None
        if o.copy_judge:
            copy = g.judge(round_node(k, f"vc{h}/copy"), [ImageFile(reference_path), image, P.copy_check_prompt()], parse_copy)
            g.when(copy, copy_question_needed, pixels=pixels.maybe(), **evidence)
            here[f"copy{h}"] = copy.maybe()
        evidence.update(here)
        checks[h] = (pixels, copy)
    hints: list[HintHandles | None] = [None] * len(case.vc_hints)
    for h, text, reference_path in judged:
        vc_prompt = P.visual_consistency_prompt(text)
        vc_rounds: list[Ref] = []
        for j in repeats:
            vc = g.judge(round_node(k, f"vc{h}/{j}"), [ImageFile(reference_path), image, vc_prompt], parse_visual_consistency, repeat=j)
            g.when(vc, no_copy_found, **evidence)
            vc_rounds.append(vc)
        hints[h] = HintHandles(*checks[h], rounds=tuple(vc_rounds))
    return RoundHandles(image, rc, aq, tuple(hints))


def _graph_parts(parts: list[P.Part]) -> list[PromptPart]:
    """Prompts name case images by path; the graph wants them as files it can hash and load."""
    return [ImageFile(p) if isinstance(p, Path) else p for p in parts]


# ------------------------------------------------------------------------------ node functions


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
        check_image_file(self.reference)  # an unreadable or oversized reference: this node's input failure
        with Image.open(self.reference) as reference:
            reference.load()
            return scoring.pixel_copy(output, reference)


def needs_another_round(**rc_rounds: int | None) -> bool:
    """Reflection goes on unless the round's Rule Compliance mark is known to be 2."""
    values = list(rc_rounds.values())
    if any(v is None for v in values):
        return True
    return scoring.metric_mark(values) < 2  # type: ignore[arg-type,operator]  # None ruled out above


def says_copy(name: str, value: Any) -> bool:
    """One piece of copy evidence: a pixel check finding an exact copy, or the judge's ``Copy: 0``."""
    return bool(value["copy"]) if name.startswith("pixels") else value == 0


def copy_question_needed(pixels: dict[str, Any] | None, **earlier: Any) -> bool:
    """Ask the judge about this hint only when its pixels are not a copy and every earlier check
    decided "not a copy" (the official loop stops at the first copy)."""
    if pixels is None or pixels["copy"]:
        return False
    return all(value is not None and not says_copy(name, value) for name, value in earlier.items())


def no_copy_found(**evidence: Any) -> bool:
    """VC is judged only when every copy check ran and none found a copy."""
    return all(value is not None and not says_copy(name, value) for name, value in evidence.items())
