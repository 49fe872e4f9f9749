"""WISE judge prompts (in umni's own words) and the parsers for their answers.

Each prompt ends with an ``## Answer format`` heading followed only by template lines of the form
``Label: <a-b>``; the offline reference backend fills exactly those lines, and a real judge is asked
to copy them with numbers. Parsers never turn an unreadable answer into a score: they raise
`ParseFailure` (no score found) or `InvalidAnswer` (a score outside its range), so the runner can
retry and, failing that, count the item as a judge failure.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from umni.errors import InvalidAnswer, ParseFailure

ANSWER_HEADING = "## Answer format"

LEGACY_LABELS = ("Consistency", "Realism", "Aesthetic Quality")
VERIFIED_LABEL = "Score"

_LEGACY_TEMPLATE = """\
You are grading one image made by a text-to-image model. The request tests whether the model can use
world knowledge: the prompt names its subject indirectly, and the note below says what an image that
applies the right knowledge must show.

Prompt given to the model: "{prompt}"
What a correct image shows: "{explanation}"

Give three marks from 0 to 2. Be demanding: keep 2 for images that leave nothing to criticise, and
choose the lower mark whenever you hesitate.

Consistency: does the image depict what the prompt asks for, read with the knowledge in the note?
  0 = the key subject or property is missing, wrong or contradicted
  1 = partly right: some required elements are there, others are missing or inaccurate
  2 = every element of the request is shown accurately and unambiguously
Realism: could the image be a photograph of the real world?
  0 = clearly artificial or physically impossible
  1 = believable overall, with visible flaws in physics, materials or proportions
  2 = photographic: correct light, materials, physics and spatial layout, no trace of generation
Aesthetic Quality: how well made is the image as a picture?
  0 = unattractive, badly composed
  1 = competent composition and colour, nothing special
  2 = outstanding composition, colour and style

Reply with exactly the three lines below, each with your mark in place of the range, and no other text.

{heading}
Consistency: <0-2>
Realism: <0-2>
Aesthetic Quality: <0-2>"""

_VERIFIED_TEMPLATE = """\
You are checking one image made by a text-to-image model. The prompt names its subject indirectly, so
the model had to use world knowledge; the note below says what a correct image shows.

Prompt given to the model: "{prompt}"
What a correct image shows: "{explanation}"

Give 1 only if the image shows the correct subject with the properties the note requires, and the
image is not broken (no garbled, missing or unrecognisable subject). Otherwise give 0. If you are
unsure, give 0. Judge meaning, not beauty.

Reply with exactly the line below, with 0 or 1 in place of the range, and no other text.

{heading}
Score: <0-1>"""


class LegacyScores(NamedTuple):
    """The three 0-2 marks of one legacy judgement."""

    consistency: int
    realism: int
    aesthetic_quality: int


def legacy_judge_prompt(prompt: str, explanation: str) -> str:
    """Prompt for the legacy three-mark judgement; send it with the generated image."""
    return _LEGACY_TEMPLATE.format(prompt=prompt, explanation=explanation, heading=ANSWER_HEADING)


def verified_judge_prompt(prompt: str, explanation: str) -> str:
    """Prompt for the verified set's binary judgement; send it with the generated image."""
    return _VERIFIED_TEMPLATE.format(prompt=prompt, explanation=explanation, heading=ANSWER_HEADING)


# A labelled mark: optional bold around the label, optional ':' or '：', then a number. The number
# is read whole (not one digit, as the official regex does) so "10" is rejected, not read as 1.
_LABELLED = re.compile(
    r"\*{0,2}\s*(consistency|realism|aesthetic\s+quality)\s*\*{0,2}\s*[:：]?\s*\*{0,2}\s*(\d+(?:\.\d+)?)",
    re.IGNORECASE,
)
_BARE_DIGIT_LINE = re.compile(r"^\s*\*{0,2}\s*(\d)\s*\*{0,2}\s*$")
_VERIFIED = re.compile(r"\*{0,2}\s*score\s*\*{0,2}\s*[:：]?\s*\*{0,2}\s*(\d+(?:\.\d+)?)", re.IGNORECASE)


def parse_legacy_answer(text: str) -> LegacyScores:
    """Read ``Consistency: X`` / ``Realism: X`` / ``Aesthetic Quality: X`` from a judge answer.

    Labels are case-insensitive and may be bold (``**Realism**: 1``), with or without a colon; if a
    label appears twice the last one counts (as in the official script). When no label is found at
    all, an answer of exactly three lines holding one digit each is read in the order C, R, A.
    """
    found: dict[str, str] = {}
    for label, value in _LABELLED.findall(text):
        found[" ".join(label.lower().split())] = value
    if found:
        absent = [name for name in LEGACY_LABELS if name.lower() not in found]
        if absent:
            raise ParseFailure(f"judge answer gives no mark for {', '.join(absent)}", raw=text)
        values = [found[name.lower()] for name in LEGACY_LABELS]
    else:
        lines = [line for line in text.splitlines() if line.strip()]
        digits = [_BARE_DIGIT_LINE.match(line) for line in lines]
        if len(lines) != 3 or not all(digits):
            raise ParseFailure("judge answer has no Consistency/Realism/Aesthetic Quality marks", raw=text)
        values = [m.group(1) for m in digits if m]
    marks = [_mark(value, 2, name, text) for name, value in zip(LEGACY_LABELS, values)]
    return LegacyScores(*marks)


def parse_verified_answer(text: str) -> int:
    """Read ``Score: 0|1`` (case-insensitive, optional bold and colon); the last one counts."""
    matches = _VERIFIED.findall(text)
    if not matches:
        raise ParseFailure("judge answer has no 'Score: 0|1' line", raw=text)
    return _mark(matches[-1], 1, VERIFIED_LABEL, text)


def _mark(value: str, highest: int, label: str, raw: str) -> int:
    if "." in value:
        number = float(value)
        if not number.is_integer():
            raise InvalidAnswer(f"{label} must be a whole number 0-{highest}, got {value}", raw=raw)
        mark = int(number)
    else:
        mark = int(value)
    if not 0 <= mark <= highest:
        raise InvalidAnswer(f"{label} must be 0-{highest}, got {value}", raw=raw)
    return mark
