"""What AEGIS says to the model under test, to the judge, and to rewrite/planning helpers.

All prompt texts here are umni's own wording. The DCE judge keeps the official output format, a JSON
object ``{"answer_list": ["Y"|"N", ...], "reason_list": [...]}`` with one answer per checklist item,
so answers parse alike; the checklist is shown as numbered ``1. [Tag] question`` lines, which the
offline reference backend also relies on to recognise a checklist judgement.

Parts lists (`list[str | image]`) follow `umni.roles.Part`: text and images in reading order. Image
values are passed through untouched (PIL images in a run, anything in tests), so these helpers do no
I/O and need no engine.
"""

from __future__ import annotations

import ast
import builtins
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from umni.plugin import ParseFailure

from .cases import AegisCase

T = TypeVar("T")
PromptVariant = Literal["prompt", "clear_prompt"]
PROMPT_VARIANTS = ("prompt", "clear_prompt")

# --------------------------------------------------------------------------------------------------
# Image markers and segments

#: `<image3>` names the third image of a list; a bare `<image>` takes the next image in order.
_MARKER = re.compile(r"<image(\d*)>")


@dataclass(frozen=True)
class TextSegment:
    text: str


@dataclass(frozen=True)
class ImageSegment(Generic[T]):
    """An image position in a text. `slot` is 0-based; `image` is None when no image fills it."""

    marker: str
    slot: int
    image: T | None = None


Segment = TextSegment | ImageSegment


def split_image_markers(text: str, images: Sequence[T] = ()) -> list[Segment]:
    """Cut a text at its image markers, pairing each marker with the image it names.

    Numbered markers (`<image2>`, how prompts and reference texts refer to their images) take
    ``images[N-1]``; bare markers (`<image>`, what a text-writing model puts where a generated image
    should go) take the images in order. A marker with no image behind it keeps ``image=None`` so a
    caller can see that a model promised more images than it produced. Empty text pieces are dropped.
    """
    segments: list[Segment] = []
    bare = 0
    pos = 0
    for match in _MARKER.finditer(text):
        if match.start() > pos:
            segments.append(TextSegment(text[pos : match.start()]))
        if match.group(1):
            slot = int(match.group(1)) - 1
        else:
            slot, bare = bare, bare + 1
        image = images[slot] if 0 <= slot < len(images) else None
        segments.append(ImageSegment(marker=match.group(0), slot=slot, image=image))
        pos = match.end()
    if pos < len(text):
        segments.append(TextSegment(text[pos:]))
    return segments


def _segments_to_parts(segments: list[Segment], images: Sequence[T], label: str | None) -> list[str | T]:
    """Parts for a list of segments; images no marker names are put in front, so none is lost."""
    named = {s.slot for s in segments if isinstance(s, ImageSegment)}
    parts: list[str | T] = []
    for slot, image in enumerate(images):
        if slot not in named:
            parts += ([f"{label} {slot + 1}:"] if label else []) + [image]
    for seg in segments:
        if isinstance(seg, TextSegment):
            parts.append(seg.text)
        elif seg.image is not None:
            parts += ([f"[{label} {seg.slot + 1}]"] if label else []) + [seg.image]
        else:
            parts.append(f"[{label or 'image'} {seg.slot + 1}: missing]")
    return _merge_text(parts)


def _merge_text(parts: list[str | T]) -> list[str | T]:
    merged: list[str | T] = []
    for part in parts:
        if isinstance(part, str):
            if not part.strip():
                continue
            if merged and isinstance(merged[-1], str):
                merged[-1] = merged[-1].rstrip() + "\n" + part.strip()
                continue
            part = part.strip()
        merged.append(part)
    return merged


# --------------------------------------------------------------------------------------------------
# What the model under test is given


def model_prompt(case: AegisCase, variant: PromptVariant = "prompt") -> str:
    """The instruction text for the model: the reasoning-heavy `prompt` (the benchmark) or the
    explicit `clear_prompt` (the paper's ablation that removes the reasoning step)."""
    if variant not in PROMPT_VARIANTS:
        raise ValueError(f"prompt variant must be one of {PROMPT_VARIANTS}, got {variant!r}")
    return getattr(case, variant)


#: Told to a text-only writer on the interleaved task (the official GPT path writes text with a chat
#: model, then renders each marker with an image model). Native interleaved models do not need it.
INTERLEAVED_MARKER_GUIDE = (
    "Answer with text and pictures together. You cannot draw here, so write the token <image> on its "
    "own at every place where a picture belongs; each <image> will later be replaced by a picture made "
    "from the surrounding text. Put each picture where it helps the explanation most."
)


def model_parts(
    case: AegisCase,
    images: Sequence[T],
    variant: PromptVariant = "prompt",
    *,
    instruction: str | None = None,
    marker_guide: bool = False,
) -> list[str | T]:
    """The interleaved input for the model: the prompt with each input image at its placeholder.

    `images` are the case's input images, in `input_image` order. `instruction` replaces the prompt
    text (a rewritten prompt, or a prompt with a plan); images its placeholders do not mention go
    first. `marker_guide` prepends `INTERLEAVED_MARKER_GUIDE` (interleaved task, text-only writer).
    """
    text = instruction if instruction is not None else model_prompt(case, variant)
    parts = _segments_to_parts(split_image_markers(text, images), images, label=None)
    if marker_guide:
        parts.insert(0, INTERLEAVED_MARKER_GUIDE)
        parts = _merge_text(parts)
    return parts


#: Put before the pictures already drawn when a marker's picture is conditioned on them.
PREVIOUS_PICTURES_NOTE = (
    "Pictures already drawn for this answer, in order; keep recurring subjects and the style consistent with them:"
)


def marker_image_prompt(
    case: AegisCase, output_text: str, slot: int, variant: PromptVariant = "prompt", *, request: str | None = None
) -> str:
    """The drawing instruction for the `slot`-th (0-based) `<image>` marker of a written answer.

    Gives the image model the task and the whole answer with the picture's place marked, so the
    picture fits the text around it; the other markers are shown as already-placed pictures.
    `request` replaces the case's prompt text (a rewritten prompt).
    """
    pieces: list[str] = []
    found = False
    for seg in split_image_markers(output_text):
        if isinstance(seg, TextSegment):
            pieces.append(seg.text)
        elif seg.slot == slot and seg.marker == "<image>":
            pieces.append("[DRAW THIS PICTURE]")
            found = True
        else:
            pieces.append(f"[picture {seg.slot + 1}]")
    if not found:
        raise ValueError(f"the text has no <image> marker number {slot + 1}")
    return (
        "Draw one picture for an illustrated answer.\n"
        f"The request was: {request if request is not None else model_prompt(case, variant)}\n"
        "Here is the written answer; the picture you draw goes where it says [DRAW THIS PICTURE]. "
        "Make it show what the text around that place describes, in a style that matches the other pictures.\n\n"
        + "".join(pieces).strip()
    )


# --------------------------------------------------------------------------------------------------
# Prompt rewriting and plug-in reasoning (paper appendix C.1 and the Bagel w/ CoT row)


def rewrite_instruction(case: AegisCase) -> str:
    """Ask a model to turn the reasoning-heavy prompt into an explicit one.

    Used for self-rewrite (the model under test rewrites its own prompt, then executes the rewrite)
    and cross-rewrite (another model rewrites; the graph binds a different backend). Give the input
    images with it, labelled (`labelled_images(images) + [rewrite_instruction(case)]`): identifying
    what they show is part of the work. Not through `model_parts`: this text names placeholders
    literally, which would place the images a second time.
    """
    return (
        f"Below is a {_TASK_NOUN[case.task]} request that only makes sense after some reasoning: it may "
        "hide names, dates, places or facts behind riddles, comparisons or references to the images.\n"
        "Rewrite it as an explicit request that someone without that knowledge could carry out "
        "directly. Work out every hidden entity and fact and state it plainly; keep every requirement "
        "of the original; keep the image placeholders (<image1>, <image2>, ...) where the images are "
        "referred to; do not answer or carry out the request yourself.\n"
        "Reply with the rewritten request only.\n\n"
        f"Request: {case.prompt}"
    )


def parse_rewrite(reply: str) -> str:
    """The rewritten prompt from a rewrite reply (code fences and a leading label removed)."""
    text = _strip_fences(reply).strip()
    text = re.sub(r"^(rewritten (request|prompt)|request|prompt)\s*:\s*", "", text, flags=re.IGNORECASE).strip()
    if not text:
        raise ParseFailure("the rewrite reply is empty", raw=reply)
    return text


def plan_instruction(case: AegisCase, variant: PromptVariant = "prompt") -> str:
    """Ask a reasoning module for an explicit plan the model under test then follows."""
    goal = {
        "understanding": "the facts and steps that lead to the answer, and the answer itself",
        "generation": "exactly what the picture must show: subjects, their identity, attributes, text, layout and style",
        "editing": "exactly what must change in the image and what must stay as it is",
        "interleaved": "the text to write and, for each picture, exactly what it must show",
    }[case.task]
    return (
        f"Think through this {_TASK_NOUN[case.task]} request before anyone acts on it. Resolve every "
        "hidden reference, recall the knowledge it needs, and write a short explicit plan covering "
        f"{goal}. Name things concretely; do not leave anything for the executor to infer.\n\n"
        f"Request: {model_prompt(case, variant)}"
    )


#: Put between the model's instruction and the plan text (plug-in reasoning).
PLAN_HEADER = "A plan worked out for this request (follow it):"


def prompt_with_plan(case: AegisCase, plan: str, variant: PromptVariant = "prompt") -> str:
    """The model's instruction with a plan attached (plug-in reasoning)."""
    plan = plan.strip()
    if not plan:
        raise ParseFailure("the plan is empty", raw=plan)
    return f"{model_prompt(case, variant)}\n\n{PLAN_HEADER}\n{plan}"


_TASK_NOUN = {
    "understanding": "question-answering",
    "generation": "image-generation",
    "editing": "image-editing",
    "interleaved": "illustrated-answer",
}

# --------------------------------------------------------------------------------------------------
# DCE judge

_TASK_OUTPUT = {
    "understanding": "a text answer",
    "generation": "a generated image",
    "editing": "an edited image",
    "interleaved": "an answer mixing text and generated images",
}

_JUDGE_INTRO = (
    "You are grading one output of a multimodal model with a fixed yes/no checklist.\n"
    "Task type: {task} (the model had to produce {output}).\n"
    "Topic: {category}.\n"
    "The request, stated explicitly: {prompt}"
)

_JUDGE_RULES = """How to grade:
- The reference answer is the source of truth for facts. Judge the model's output, not the reference.
- Items tagged [Text] are about the output's text. If there is no text, they get N.
- Items tagged [Image] are about the output image(s). A reference image is one correct example, not a
  target to match pixel by pixel: another picture that shows what the item asks about also deserves Y.
  If there is no output image, they get N.
- Items tagged [Consistency] ask whether the output's text and images agree with each other.
- Take each item literally and on its own; answer Y only when the output clearly satisfies it.
Checklist ({n} items):
{checklist}
Reply with one JSON object and nothing else, in this shape:
{{"answer_list": ["Y", "N", ...], "reason_list": ["why item 1 got its answer", ...]}}
answer_list holds exactly {n} entries, each "Y" or "N", in checklist order; reason_list gives one short
reason per item."""


#: The official judge request umni's restates (its inputs, rules and JSON reply; not its words).
OFFICIAL_JUDGE = (
    "AEGIS Deterministic Checklist-based Evaluation (DongSky/AEGIS): Y/N per checklist item as JSON "
    "answer_list/reason_list, in umni's wording"
)


def judge_texts() -> tuple[str, ...]:
    """The fixed texts of the judge request (its introduction and rules), for a run's provenance."""
    return (_JUDGE_INTRO, _JUDGE_RULES)


def checklist_lines(case: AegisCase) -> str:
    """The checklist as numbered `1. [Tag] question` lines."""
    return "\n".join(f"{i}. {item.render()}" for i, item in enumerate(case.checklist, start=1))


def judge_parts(
    case: AegisCase,
    *,
    output_text: str | None = None,
    output_images: Sequence[T] = (),
    reference_images: Sequence[T] = (),
    input_images: Sequence[T] = (),
) -> list[str | T]:
    """The DCE judge input: task, topic, clear prompt, references, the output, the checklist.

    `reference_images` are the case's `ref_image` files and `input_images` its `input_image` files,
    in file order; input images are optional (the paper lists only references and output) but help
    on editing items that ask what was preserved. In interleaved outputs each `<image>` marker is
    replaced by the output image it stands for, labelled so the reasons can refer to it; output
    images no marker names are shown before the text.
    """
    if not (output_text and output_text.strip()) and not output_images:
        raise ValueError(f"case {case.id}: nothing to judge (no output text, no output image); count it as an inference failure")
    parts: list[str | T] = judge_context(case, reference_images=reference_images, input_images=input_images)
    parts.append("The model's output:")
    if output_text and output_text.strip():
        parts += _segments_to_parts(split_image_markers(output_text, output_images), output_images, "output image")
    else:
        parts.append("(no text)")
        for i, image in enumerate(output_images, start=1):
            parts += [f"Output image {i}:", image]
    if not output_images:
        parts.append("(no output image)")
    parts.append(judge_instructions(case))
    return _merge_text(parts)


def judge_context(case: AegisCase, *, reference_images: Sequence[T] = (), input_images: Sequence[T] = ()) -> list[str | T]:
    """The part of the judge input that comes before the model's output: task, topic, clear
    prompt, the model's input images and the reference answer.

    A graph whose output is only known at run time puts its output parts (node references) between
    this and `judge_instructions`; `judge_parts` does the same with known values.
    """
    parts: list[str | T] = [
        _JUDGE_INTRO.format(
            task=case.task, output=_TASK_OUTPUT[case.task], category=case.category.replace("_", " & "), prompt=case.clear_prompt
        )
    ]
    if input_images:
        parts.append("Input images given to the model (<imageN> in the request is input image N):")
        for i, image in enumerate(input_images, start=1):
            parts += [f"Input image {i}:", image]
    ref_text = case.ref_text.strip()
    if ref_text or reference_images:
        parts.append("Reference answer:")
        if ref_text:
            parts += _segments_to_parts(split_image_markers(ref_text, reference_images), reference_images, "reference image")
        else:
            for i, image in enumerate(reference_images, start=1):
                parts += [f"Reference image {i}:", image]
    else:
        parts.append("Reference answer: none given; rely on the checklist and general knowledge.")
    return _merge_text(parts)


def judge_instructions(case: AegisCase) -> str:
    """The grading rules, the numbered checklist and the required JSON reply format (last part)."""
    return _JUDGE_RULES.format(n=len(case.checklist), checklist=checklist_lines(case))


def count_draw_markers(text: str) -> int:
    """How many bare `<image>` markers (places a picture is to be drawn) a written answer has.

    Numbered markers (`<image2>`) refer to the request's input images and are not counted.
    """
    return sum(1 for m in _MARKER.finditer(text) if not m.group(1))


def number_draw_markers(text: str, drawn: int) -> str:
    """The written answer as the judge sees it: the k-th bare `<image>` becomes `[output image k]`
    for the first `drawn` markers; later ones (over the drawing limit) say no picture was made."""
    counter = 0

    def label(match: re.Match[str]) -> str:
        nonlocal counter
        if match.group(1):
            return match.group(0)
        counter += 1
        if counter <= drawn:
            return f"[output image {counter}]"
        return f"[output image {counter}: not drawn, over the limit of {drawn} pictures]"

    numbered = _MARKER.sub(label, text).strip()
    shown = min(counter, drawn)
    if shown == 0:
        return numbered + "\n(no output image: the answer has no <image> marker)"
    return numbered + f"\n(The {shown} output image(s) follow, in order.)"


def labelled_images(images: Sequence[T], label: str = "Input image <image{n}>:") -> list[str | T]:
    """Images each preceded by a label; used when the text that refers to them (a rewrite, say)
    is only known at run time, so the images cannot be placed at its placeholders."""
    parts: list[str | T] = []
    for n, image in enumerate(images, start=1):
        parts += [label.format(n=n), image]
    return parts


@dataclass(frozen=True)
class ChecklistVerdict:
    """A parsed DCE judgement: one Y (True) / N (False) per checklist item, with reasons.

    ``from_prose`` says the JSON object had to be dug out of surrounding prose, which the official
    pipeline does not do (it reads the reply as one JSON object or Python literal).
    """

    answers: tuple[bool, ...]
    reasons: tuple[str, ...] = ()
    from_prose: bool = False

    @property
    def yes(self) -> int:
        return sum(self.answers)

    @property
    def letters(self) -> tuple[str, ...]:
        return tuple("Y" if a else "N" for a in self.answers)


#: The answers the official scorer counts as Y (compared as exact strings; "Y." or "yEs" are not Y).
OFFICIAL_YES = frozenset({"Y", "y", "yes", "Yes", "YES"})
#: The answers umni reads as N. Any other answer (officially an N) is re-asked, then counted as an
#: evaluation failure, so a garbled judgement never becomes a silent fail.
EXACT_NO = frozenset({"N", "n", "no", "No", "NO"})
_FENCE = re.compile(r"```[A-Za-z0-9_-]*\s*\n?(.*?)```", re.DOTALL)
_WHOLE_FENCE = re.compile(r"\A\s*```[A-Za-z0-9_-]*\s*\n?(.*?)```\s*\Z", re.DOTALL)
#: Python-literal fallback is only tried on a span this short (bounds parse time on hostile input).
_LITERAL_LIMIT = 20_000


def parse_judge_reply(reply: str, n_items: int) -> ChecklistVerdict:
    """Read a DCE judge reply; raise `ParseFailure` (an evaluation failure) if it is not usable.

    Finds the JSON object carrying ``answer_list`` anywhere in the reply (inside a code fence or
    surrounded by prose; the latter is flagged ``from_prose``, a listed deviation). If no JSON object
    parses, the span from the first ``{`` to the last ``}`` is read with `ast.literal_eval` (literals
    only, nothing is executed; the official pipeline calls `eval` here). Each answer must be one of
    the exact strings the official scorer counts as Y (`OFFICIAL_YES`) or their N counterparts
    (`EXACT_NO`), one per item. The official scorer counts any other answer ("Y.", "yEs", JSON
    ``true``) as N; we fail instead, so the judge is asked again and a garbled judgement is never scored.
    """
    found = _find_answer_object(reply)
    if found is None:
        raise ParseFailure("no JSON object with an 'answer_list' in the judge reply", raw=reply)
    obj, whole = found
    answers = obj.get("answer_list")
    if not isinstance(answers, list):
        raise ParseFailure(f"'answer_list' must be a list, got {type(answers).__name__}", raw=reply)
    if len(answers) != n_items:
        raise ParseFailure(f"the judge gave {len(answers)} answers for {n_items} checklist items", raw=reply)
    parsed: list[bool] = []
    for i, answer in enumerate(answers, start=1):
        if isinstance(answer, str) and answer in OFFICIAL_YES:
            parsed.append(True)
        elif isinstance(answer, str) and answer in EXACT_NO:
            parsed.append(False)
        else:
            raise ParseFailure(f"answer {i} is {answer!r}, not one of Y, N, yes, no (the official scorer reads it as N)", raw=reply)
    reasons = obj.get("reason_list")
    reason_texts = tuple(str(r) for r in reasons) if isinstance(reasons, list) else ()
    return ChecklistVerdict(answers=tuple(parsed), reasons=reason_texts, from_prose=not whole)


#: The fence markers the official reader deletes, in its order, wherever they stand in the reply.
_OFFICIAL_FENCES = ("```python", "```json", "```")
#: The answer list the official reader records when the reply is not an object (or does not parse).
OFFICIAL_PARSE_ERROR = "parsed_error"
#: Longest reply read as a Python literal for the official reading; past it, no reading is claimed.
_OFFICIAL_LITERAL_LIMIT = 1_000_000


@dataclass(frozen=True)
class OfficialJudgement:
    """How the official pipeline takes one judge reply (``eval/<task>.py`` reads it, then
    ``eval_score/<task>.py`` scores it).

    ``rows`` are what the case adds to the official results, in order: a score, or None for an
    evaluation failure. A reply that does not parse adds two: a copy of the case marked failed
    (which has no answer list) and the written result, whose answer list is the text
    ``'parsed_error'``. ``read_as`` names what the answer list was (``list``, ``str`` — read
    character by character —, ``dict`` — read by its keys —, ``tuple``, ``set``, or
    ``parsed_error``). ``stop`` says why the official scripts would stop on this reply instead of
    giving a figure (no ``rows`` then).
    """

    rows: tuple[float | None, ...]
    read_as: str = ""
    stop: str | None = None

    @property
    def failure_copies(self) -> int:
        return max(len(self.rows) - 1, 0)


def official_judgement(reply: str, n_items: int) -> OfficialJudgement:
    """The official reading of `reply` for a case of `n_items` checklist items, without running it.

    The official reader deletes every ```` ```python ````, ```` ```json ```` and ```` ``` ```` marker
    and strips the text, then takes ``json.loads`` of it or, failing that, Python ``eval``. Here
    ``eval`` is replaced by ``ast.literal_eval``, which gives the same value for every literal; a
    reply that only running it could read (``['Y'] * 3``) has no official reading (``stop``), and
    one naming something that is not a Python builtin (JSON's ``true`` in a text JSON refused) fails
    as ``eval`` does with NameError. (The official ``eval`` also sees the script's own variables; a
    reply naming one of those is not modelled.)
    """
    text = reply
    for marker in _OFFICIAL_FENCES:
        text = text.replace(marker, "")
    text = text.strip()
    value, how = _official_value(text)
    if how == "needs_eval":
        return OfficialJudgement((), stop="the official reader would run this reply as Python code (eval); umni never does")
    if how == "unparsed":  # eval_successful False: the failure copy, then the written 'parsed_error' row
        return OfficialJudgement((None, _official_row(OFFICIAL_PARSE_ERROR, n_items)), OFFICIAL_PARSE_ERROR)
    if not isinstance(value, dict):
        return OfficialJudgement((_official_row(OFFICIAL_PARSE_ERROR, n_items),), OFFICIAL_PARSE_ERROR)
    absent = [key for key in ("answer_list", "reason_list") if key not in value]
    if absent:
        return OfficialJudgement((), stop=f"the official reader stops (KeyError): the reply has no {absent[0]}")
    answers = value["answer_list"]
    if not isinstance(answers, (str, bytes, list, tuple, dict, set, frozenset)):
        return OfficialJudgement(
            (), type(answers).__name__, stop=f"the official scorer stops (TypeError): len() of a {type(answers).__name__} answer_list"
        )
    if n_items == 0 and len(answers) == 0:
        return OfficialJudgement((), type(answers).__name__, stop="the official scorer stops (ZeroDivisionError): no items")
    return OfficialJudgement((_official_row(answers, n_items),), type(answers).__name__)


def _official_row(answers: Any, n_items: int) -> float | None:
    """eval_score's reading of one answer list: an evaluation failure (None) unless its length is the
    number of items, else the share of its members (characters, keys…) that are an official Y string."""
    if len(answers) != n_items:
        return None
    return sum(1 for a in answers if isinstance(a, str) and a in OFFICIAL_YES) / len(answers)


def _official_value(text: str) -> tuple[Any, str]:
    """(value, how): ``json`` or ``literal`` with the value; ``unparsed`` where the official reader's
    json.loads and eval both fail; ``needs_eval`` where only running the text would tell."""
    try:
        return json.loads(text), "json"
    except (ValueError, RecursionError):
        pass
    if len(text) > _OFFICIAL_LITERAL_LIMIT:
        return None, "needs_eval"
    try:
        return ast.literal_eval(text), "literal"
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    try:
        tree = ast.parse(text, mode="eval")
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None, "unparsed"
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    if names - _BUILTIN_NAMES:
        return None, "unparsed"  # eval raises NameError on the first such name it reaches
    return None, "needs_eval"


_BUILTIN_NAMES = frozenset(dir(builtins))


def _whole_answer_object(reply: str) -> dict | None:
    """The reply read whole (inside one code fence at most), if that gives an object with an answer list."""
    text = reply.strip()
    fenced = _WHOLE_FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    value = _literal(text)
    return value if isinstance(value, dict) and "answer_list" in value else None


def _literal(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        pass
    if len(text) > _LITERAL_LIMIT:
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _find_answer_object(reply: str) -> tuple[dict, bool] | None:
    """The object with an ``answer_list`` and whether it was the whole reply (bar one code fence)."""
    whole = _whole_answer_object(reply)
    if whole is not None:
        return whole, True
    candidates = [m.group(1) for m in _FENCE.finditer(reply)] + [reply]
    decoder = json.JSONDecoder()
    for text in candidates:
        for start in (m.start() for m in re.finditer(r"\{", text)):
            try:
                value, _ = decoder.raw_decode(text, start)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict) and "answer_list" in value:
                return value, False
    for text in candidates:
        start, end = text.find("{"), text.rfind("}")
        if start < 0 or end <= start or end - start > _LITERAL_LIMIT:
            continue
        try:
            value = ast.literal_eval(text[start : end + 1])
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(value, dict) and "answer_list" in value:
            return value, False
    return None


def _strip_fences(text: str) -> str:
    match = _FENCE.search(text)
    return match.group(1) if match else text
