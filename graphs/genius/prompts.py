"""GENIUS prompts: the generation input in three formats, the four judge prompts, the answer parser.

Generation input is an ordered list of parts: a ``str`` is text, a ``Path`` is an image file to put at
that point. The three formats are the paper's (appendix D.1):

* ``edit`` — images are given apart from the text (here: all first, each once, in order of first
  mention) and the text refers to them by placeholders ``[Image 1]``, ``[Image 2]`` …; for models
  that take images plus one instruction (editing models).
* ``interleaved`` (default) — each image moves to the end of the sentence that mentions it, so text
  stays whole sentences.
* ``fine_grained`` — each image sits exactly where its tag was, even mid-sentence.

The instruction always comes last, as its own text part (so a caller can tell it apart).

Judge prompts are umni's own wording of the official rubrics. Each ends with an ``## Answer format``
heading followed by one template line ``Label: <a-b>`` (what the offline reference backend fills);
`parse_judge_answer` reads the label case-insensitively with ``:`` or ``：`` and raises
`ParseFailure` / `InvalidAnswer` instead of ever returning a made-up 0.

The last sections hold the texts of the inference-time strategies (pre-planning, post-reflection
feedback, hints given as input) and the VQA probe with its deterministic choice of distractors.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from enum import Enum
from pathlib import Path

from umni.plugin import InvalidAnswer, ParseFailure

from .dataset import IMAGE_TAG, GeniusCase

Part = str | Path

ANSWER_HEADING = "## Answer format"


class InputFormat(str, Enum):
    EDIT = "edit"
    INTERLEAVED = "interleaved"
    FINE_GRAINED = "fine_grained"


# ------------------------------------------------------------------------------ generation input


def generation_input(case: GeniusCase, fmt: InputFormat | str = InputFormat.INTERLEAVED) -> list[Part]:
    """The case's context and instruction as ordered parts in `fmt`."""
    fmt = InputFormat(fmt)
    paths = {name: ref.path for name, ref in case.images.items()}
    return context_parts(case.context, case.instruction, paths, fmt)


def context_parts(context: str, instruction: str, images: dict[str, Path], fmt: InputFormat | str) -> list[Part]:
    """Split `context` at its ``<image:NAME>`` tags (NAME looked up in `images`) and lay it out in `fmt`."""
    fmt = InputFormat(fmt)
    tokens = _tokens(context)
    if fmt is InputFormat.FINE_GRAINED:
        parts: list[Part] = [images[t.name] if isinstance(t, _Tag) else t for t in tokens]
    elif fmt is InputFormat.INTERLEAVED:
        parts = _at_sentence_ends(tokens, images)
    else:
        parts = _with_placeholders(tokens, images)
    return [*_tidy(parts), instruction.strip()]


class _Tag:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


def _tokens(context: str) -> list[str | _Tag]:
    tokens: list[str | _Tag] = []
    position = 0
    for match in IMAGE_TAG.finditer(context):
        tokens.append(context[position : match.start()])
        tokens.append(_Tag(match.group(1)))
        position = match.end()
    tokens.append(context[position:])
    return tokens


# A sentence ends at terminal punctuation (with any closing quotes or brackets) or at a line break.
_SENTENCE_END = re.compile(r"[.!?。！？…]+[\"'”’)\]]*|\n")
_ENDS_SENTENCE = re.compile(r"(?:[.!?。！？…]+[\"'”’)\]]*|:|：)\s*$")


def _at_sentence_ends(tokens: list[str | _Tag], images: dict[str, Path]) -> list[Part]:
    parts: list[Part] = []
    pending: list[Path] = []
    for token in tokens:
        if isinstance(token, _Tag):
            text_so_far = "".join(p for p in parts if isinstance(p, str))
            at_boundary = not text_so_far.strip() or _ENDS_SENTENCE.search(text_so_far) or text_so_far.endswith("\n")
            if at_boundary and not pending:
                parts.append(images[token.name])
            else:
                pending.append(images[token.name])
            continue
        text = token
        if pending:
            end = _SENTENCE_END.search(text)
            if end is None:
                parts.append(text)
                continue
            parts.append(text[: end.end()])
            parts.extend(pending)
            pending = []
            text = text[end.end() :]
        parts.append(text)
    parts.extend(pending)
    return parts


def _with_placeholders(tokens: list[str | _Tag], images: dict[str, Path]) -> list[Part]:
    numbers: dict[str, int] = {}
    text: list[str] = []
    for token in tokens:
        if isinstance(token, _Tag):
            number = numbers.setdefault(token.name, len(numbers) + 1)
            text.append(f"[Image {number}]")
        else:
            text.append(token)
    return [*(images[name] for name in numbers), "".join(text)]


def _tidy(parts: list[Part]) -> list[Part]:
    """Join neighbouring text, close the gaps a removed tag leaves, drop empty text."""
    merged: list[Part] = []
    for part in parts:
        if isinstance(part, str) and merged and isinstance(merged[-1], str):
            merged[-1] = merged[-1] + part
        else:
            merged.append(part)
    tidy: list[Part] = []
    for part in merged:
        if isinstance(part, str):
            part = re.sub(r"[ \t]{2,}", " ", part)
            part = re.sub(r"[ \t]+([.,;:!?。，；：！？])", r"\1", part).strip()
            if not part:
                continue
        tidy.append(part)
    return tidy


# ------------------------------------------------------------------------------ judge prompts

METRIC_LABELS = {
    "rc": "Rule Compliance",
    "vc": "Visual Consistency",
    "aq": "Aesthetic Quality",
    "copy": "Copy",
}
METRIC_RANGES = {"rc": 2, "vc": 2, "aq": 2, "copy": 1}
#: The images to send with each judge prompt, in this order.
JUDGE_IMAGES = {"rc": ("output",), "vc": ("reference", "output"), "aq": ("output",), "copy": ("reference", "output")}

_RC = """\
You are auditing one image produced by a generative model for a reasoning task. The task's rules were
given to the model in context; you get the curated description of what a correct result must show.
Compare the image with that description strictly: check every object, attribute, count, colour and
spatial relation it names. Do not reward beauty, and do not excuse a detail because the rest is right.

Description of a correct result: {hint}

Marks:
  2 = the image matches the description with no discrepancy
  1 = the main intent is visible, but one or more details (an attribute, a count, a position) are wrong
  0 = the main intent is missing or contradicted, or the image ignores the task

Reply with exactly the line below, your mark in place of the range, and no other text.

{heading}
Rule Compliance: <0-2>"""

_VC = """\
You get two images. The first is a reference image from the task's context; the second was generated
by a model that had to keep the identity of a subject from the reference while following new rules.
Judge only whether that subject is still recognisably the same one; the requested changes are allowed.

What must stay consistent: {hint}

Marks:
  2 = the subject keeps its identity (shape, features, markings) and any change applied to it is smooth
  1 = the subject is recognisably derived from the reference, but identity details are lost or distorted
  0 = the subject is swapped for another, left out, or broken beyond recognition

Reply with exactly the line below, your mark in place of the range, and no other text.

{heading}
Visual Consistency: <0-2>"""

_AQ = """\
You are rating the visual quality of one generated image, regardless of what it was meant to show.
Look at anatomy and structure (hands, faces, limbs, objects that hold together), lighting and
shadows, rendering clarity, and generation artefacts such as melted shapes or garbled details.

Marks:
  2 = exceptional: clean, coherent and polished, fit for professional use
  1 = standard: acceptable overall, with minor flaws
  0 = failed: collapsed structure, heavy artefacts, or an image that is hard to make out

Reply with exactly the line below, your mark in place of the range, and no other text.

{heading}
Aesthetic Quality: <0-2>"""

_COPY = """\
You get two images. The first is a reference image given to a model as input; the second is what the
model returned. Decide whether the second image is simply the first one returned again: the same
picture pixel for pixel (allowing only resizing or recompression), with no generated change at all.

Give 0 if it is such a copy, 1 if the model produced anything new.

Reply with exactly the line below, 0 or 1 in place of the range, and no other text.

{heading}
Copy: <0-1>"""


#: The official judge prompts umni's four restate (their rubrics, scales and answer lines; not their words).
OFFICIAL_JUDGE = (
    "GENIUS judge prompts (arctanxarc/GENIUS eval.py; paper appendix): Rule Compliance, Visual Consistency "
    "and Aesthetic Quality 0-2 and the copy check 0|1, in umni's wording"
)


def judge_texts() -> tuple[str, ...]:
    """The fixed texts of the four judge prompts, in the order RC, VC, AQ, copy (for a run's provenance)."""
    return (_RC, _VC, _AQ, _COPY, ANSWER_HEADING)


def rule_compliance_prompt(rc_hint: str) -> str:
    """Judge prompt for Rule Compliance; send with the output image."""
    return _RC.format(hint=hint_text(rc_hint), heading=ANSWER_HEADING)


def visual_consistency_prompt(vc_hint: str) -> str:
    """Judge prompt for one Visual Consistency hint; send with the reference image, then the output."""
    return _VC.format(hint=hint_text(vc_hint), heading=ANSWER_HEADING)


def aesthetic_quality_prompt() -> str:
    """Judge prompt for Aesthetic Quality; send with the output image."""
    return _AQ.format(heading=ANSWER_HEADING)


def copy_check_prompt() -> str:
    """Judge prompt for the copy check run before Visual Consistency; reference image, then output."""
    return _COPY.format(heading=ANSWER_HEADING)


def hint_text(hint: str) -> str:
    """A hint with its ``<image:NAME>`` tags written as words the judge can follow."""
    return IMAGE_TAG.sub("the reference image", hint).strip()


# ------------------------------------------------------------------------------ answer parser


def _label_pattern(label: str) -> re.Pattern[str]:
    """The official label rule: the label's words with optional space between them, an ASCII or
    full-width colon, then the digits (``Rule Compliance: 2``, ``RuleCompliance：2``)."""
    words = r"\s*".join(re.escape(word) for word in label.split())
    return re.compile(rf"{words}\s*[:：]\s*(\d+)(\.\d+)?", re.IGNORECASE)


_PATTERNS = {metric: _label_pattern(label) for metric, label in METRIC_LABELS.items()}


def parse_judge_answer(text: str, metric: str) -> int:
    """Read ``<Label>: X`` for `metric` (``rc``, ``vc``, ``aq`` or ``copy``) as the official parser
    finds it: the first match counts. Where the official parser reads a number anyway, umni asks again
    instead (a listed deviation): ``1.5`` (officially 1, the digits before the point) and a mark above
    the scale such as ``3`` (officially 3, i.e. 150 after ×50) are invalid answers, and a reply with no
    label line (officially 0) is a parse failure."""
    try:
        pattern, highest, label = _PATTERNS[metric], METRIC_RANGES[metric], METRIC_LABELS[metric]
    except KeyError:
        raise ValueError(f"unknown GENIUS metric {metric!r}; use one of: {', '.join(METRIC_LABELS)}") from None
    match = pattern.search(text)
    if match is None:
        raise ParseFailure(f"judge answer has no '{label}: X' line", raw=text)
    digits, fraction = match.group(1), match.group(2)
    if (fraction and fraction.strip(".0")) or not 0 <= int(digits) <= highest:
        raise InvalidAnswer(f"{label} must be a whole number 0-{highest}, got {digits}{fraction or ''}", raw=text)
    return int(digits)


def official_reading(text: str | None, metric: str) -> int:
    """What the official parser makes of a reply: the digits after the first label, else 0."""
    match = _PATTERNS[metric].search(text or "")
    return int(match.group(1)) if match else 0


# ------------------------------------------------------------------------------ strategy prompts
#
# Texts for the inference-time strategies the paper tried (none is part of the official scoring):
# pre-planning, post-reflection, hints given as input, and the VQA probe. None of them contains a
# ``Label: <a-b>`` template line, because they ask for free text or a choice, not for a mark.

PLAN_HEADING = "A plan for the image, written before drawing:"
PREVIOUS_ATTEMPT = "Your previous attempt at this task:"
FEEDBACK_HEADING = "Feedback on that attempt:"
REGENERATE_REQUEST = "Make a new image for the task that keeps what was right and fixes every problem the feedback names."
HINT_HEADING = "Hint: a correct result shows the following."
REFERENCE_HINT_HEADING = "Hint: keep this from the reference image below."


def plan_request() -> str:
    """Asks the model to reason about the context and write a plan, before any image is made."""
    return (
        "Do not draw anything yet. First work out the task: which rules, preferences or meanings does the "
        "context above set up, and what do they imply for the requested image? Then write a short, concrete "
        "plan of the final image: every object, how many, their colours, shapes and positions, and what must "
        "stay as in the context images. Reply with the plan only."
    )


def self_critique_request() -> str:
    """Asks the model to check its own image against the context (post-reflection, critic=self)."""
    return (
        "Above is the image that was made for this task. Check it carefully against the rules, preferences "
        "and meanings the context sets up and against the instruction. List concretely what is wrong or "
        "missing and how to fix it, as advice for a new attempt. If nothing is wrong, say that it is correct."
    )


def judge_critique_prompt(rc_hint: str) -> str:
    """Asks the judge for feedback on an output (post-reflection, critic=judge).

    The judge knows the curated description of a correct result, so its feedback carries that gold
    information into the next attempt; critic=self is the variant without that help.
    """
    return (
        "You are reviewing an image a model made for a reasoning task, to help it improve. "
        f"A correct result shows: {hint_text(rc_hint)}\n"
        "Compare the image with that description. In a few sentences, say what is wrong or missing "
        "(objects, counts, colours, positions) and what the next attempt should change. Do not give a score."
    )


def hint_parts(case: GeniusCase, mode: str) -> list[Part]:
    """Hints given to the generator with its input: ``text`` gives the rc_hint; ``multimodal`` adds each
    vc_hint with its reference image; ``none`` gives nothing."""
    if mode == "none":
        return []
    if mode not in ("text", "multimodal"):
        raise ValueError(f"unknown hint mode {mode!r}; use none, text or multimodal")
    parts: list[Part] = [f"{HINT_HEADING} {hint_text(case.rc_hint)}"]
    if mode == "multimodal":
        for hint in case.vc_hints:
            if hint.reference is not None:
                parts += [REFERENCE_HINT_HEADING, hint.reference.path, hint_text(hint.text)]
    return parts


# ------------------------------------------------------------------------------ VQA probe

PROBE_QUESTION = (
    "Do not draw anything. Which description matches the image that a correct answer to this task "
    "would show? Choose one option."
)
#: How many wrong options a probe question gets when the case set has enough other hints.
PROBE_DISTRACTORS = 3


def probe_choices(case: GeniusCase, pool: Sequence[GeniusCase], distractors: int = PROBE_DISTRACTORS) -> tuple[list[str], int]:
    """Options of the VQA probe for `case` and the index of the right one (its rc_hint).

    Distractors are other cases' rc_hints, from the same dimension first (they share the task's
    style, so the right option does not stand out by topic); only when a dimension has too few
    cases are the other dimensions used. The choice and the position of the right option come from
    hashes of the case keys, so they are the same on every run and do not depend on the pool's order.
    Texts that equal the right option (ignoring case and spacing) are never used.
    """
    answer = hint_text(case.rc_hint)
    taken = {_normal(answer)}

    def rank(other: GeniusCase) -> str:
        return _digest(case.key, other.key)

    others = sorted((c for c in pool if c.key != case.key), key=lambda c: (c.dimension != case.dimension, rank(c)))
    chosen: list[str] = []
    for other in others:
        text = hint_text(other.rc_hint)
        if len(chosen) == distractors:
            break
        if _normal(text) not in taken:
            taken.add(_normal(text))
            chosen.append(text)
    position = int(_digest(case.key, "answer position"), 16) % (len(chosen) + 1)
    return chosen[:position] + [answer] + chosen[position:], position


def _normal(text: str) -> str:
    return " ".join(text.lower().split())


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()
