"""WISE judge prompts (in umni's own words) and the parsers for their answers.

Each prompt ends with an ``## Answer format`` heading followed only by template lines of the form
``Label: <a-b>``; the offline reference backend fills exactly those lines, and a real judge is asked
to copy them with numbers. Parsers never turn an unreadable answer into a score: they raise
`ParseFailure` (no score found) or `InvalidAnswer` (a score outside its range), so the runner can
retry and, failing that, count the item as a judge failure.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import NamedTuple

import yaml

from umni.plugin import InputError, InvalidAnswer, ParseFailure

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
You are checking one image made by a text-to-image model. The prompt often names its subject only
indirectly (through culture, science, space or time), so the model had to work out what to draw; the
note below is the reference reading: it says what the right answer is and what a correct image shows.
Judge meaning, not beauty.

Prompt given to the model: "{prompt}"
What a correct image shows: "{explanation}"

Give 1 only if both hold:
- the image shows what the note requires: the right subject, with the states, behaviours, relations
  or effects the knowledge implies, not merely the literal words of the prompt;
- the image is usable: no collapsed, badly deformed, garbled or unrecognisable main subject.
An ordinary composition, a plain or non-photographic style, or modest looks are no reason for 0.

Give 0 if the intended answer is missing or wrong, a key object, attribute or relation is missing or
contradicted, the evidence is too ambiguous to verify, or the image is broken. If in doubt, give 0.

Reply with exactly the line below, with 0 or 1 in place of the range, and no other text.

{heading}
Score: <0-1>"""


#: System messages of the two judge requests (the official requests carry one too; these are umni's words).
LEGACY_SYSTEM = (
    "You grade images made by text-to-image models. Apply the grading protocol strictly and answer only in its format."
)
VERIFIED_SYSTEM = (
    "You check images made by text-to-image models for a knowledge benchmark. Follow the protocol exactly."
)


#: The official judge request each of umni's judge templates restates (its rubric, scale, answer
#: format and system message; not its words: deviation ``judge-wording``).
OFFICIAL_JUDGE = {
    "verified": "WISE verified judge request (PKU-YuanGroup/WISE vllm_eval.py): binary Score 0|1, in umni's wording",
    "legacy": "WISE judge request (PKU-YuanGroup/WISE WISE_legacy/gpt_eval.py): Consistency, Realism and "
    "Aesthetic Quality 0-2, in umni's wording",
}


def judge_texts(scoring: str) -> tuple[str, ...]:
    """The fixed texts of umni's judge request for `scoring`: its system message and template."""
    if scoring == "legacy":
        return (LEGACY_SYSTEM, _LEGACY_TEMPLATE)
    return (VERIFIED_SYSTEM, _VERIFIED_TEMPLATE)


class JudgeTemplate(NamedTuple):
    """A judge request from the user's file (``--option judge_prompt=FILE``): the system message and
    the user text, with ``{prompt}`` and ``{explanation}`` where the case's texts go."""

    system: str | None
    user: str

    def render(self, prompt: str, explanation: str) -> str:
        return self.user.replace("{prompt}", prompt).replace("{explanation}", explanation)


def load_judge_template(path: str | Path) -> JudgeTemplate:
    """Read a judge template file: YAML (or JSON) with ``user`` (required, holding ``{prompt}`` and
    ``{explanation}``) and ``system`` (optional). This is how a run asks the judge with the authors'
    own protocol text, which umni does not ship."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise InputError(f"cannot read the judge template ({exc})", path=path) from None
    if not isinstance(raw, dict) or set(raw) - {"system", "user"}:
        raise InputError("a judge template maps 'user' (and optionally 'system') to text", path=path)
    user, system = raw.get("user"), raw.get("system")
    if not isinstance(user, str) or "{prompt}" not in user or "{explanation}" not in user:
        raise InputError("'user' must be text holding {prompt} and {explanation}", path=path, field="user")
    if system is not None and not isinstance(system, str):
        raise InputError("'system' must be text", path=path, field="system")
    return JudgeTemplate(system=system, user=user)


def judge_template(path: Path) -> JudgeTemplate:
    """The judge template of `path`, read once per file version (every case's graph asks for it)."""
    stat = path.stat()
    return _read_template(str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=8)
def _read_template(path: str, mtime_ns: int, size: int) -> JudgeTemplate:
    return load_judge_template(path)


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


# -- reading the judge's reply ----------------------------------------------------------------------
#
# The official scripts' rules, restated (PKU-YuanGroup/WISE ``vllm_eval.py`` and
# ``WISE_legacy/gpt_eval.py``):
#
# * a label is the word, optionally wrapped in up to two ``*`` on each side, then optional blanks, an
#   optional ASCII colon (a full-width colon is not in the official class), optional blanks, a mark;
# * verified: complete ``<think>…</think>`` blocks are removed first (then any stray ``</think>``
#   tag); the FIRST ``Score`` label followed by a 0 or 1 digit gives the score; with no such label,
#   a reply with exactly one line that is a bare 0 or 1 gives it;
# * legacy: every Consistency / Realism / Aesthetic Quality label is read (one digit after it), the
#   LAST of each label winning; with no label at all, the first three lines that are a bare 0, 1 or
#   2 are C, R, A. Nothing is stripped first.
# * digits: the verified script's mark is ``[01]``, ASCII only, so ``Score: １`` (full-width) reads
#   nothing there; the legacy script's mark is ``\d``, which takes any Unicode digit (``float`` reads
#   ``２`` as 2.0), so a full-width legacy mark counts. Both bare-line fallbacks are ASCII.
#
# umni keeps these rules and adds two refusals, both listed deviations (see `deviations.py`): the
# number after a label is read whole, so ``10``, ``1.5`` or a legacy ``5`` is asked again instead of
# being read as its first digit (officially ``Score: 2`` is passed over for a later ``Score: 1``, and
# legacy marks 3-9 are accepted); and a reply holding only the end of a reasoning block (the
# template opened ``<think>``) is read after its last ``</think>``, where the official script removes
# the tag and reads the draft before it.

_LABEL = r"\*{{0,2}}({label})\*{{0,2}}\s*:?\s*"
_OFFICIAL_VERIFIED = re.compile(_LABEL.format(label="Score") + r"([01])\b", re.IGNORECASE)
#: ASCII digits only, as the official ``[01]``: a full-width or other Unicode digit after ``Score`` is
#: no mark (the label is passed over, and a reply with nothing else is a parse failure).
_WHOLE_VERIFIED = re.compile(_LABEL.format(label="Score") + r"([0-9]+(?:\.[0-9]+)?)\b", re.IGNORECASE)
_LEGACY_WORDS = "Consistency|Realism|Aesthetic Quality"
_OFFICIAL_LEGACY = re.compile(_LABEL.format(label=_LEGACY_WORDS) + r"(\d)", re.IGNORECASE)
_WHOLE_LEGACY = re.compile(_LABEL.format(label=_LEGACY_WORDS) + r"(\d+(?:\.\d+)?)", re.IGNORECASE)
_BARE_BINARY = re.compile(r"(?m)^\s*([01])\s*$")
_BARE_MARK = re.compile(r"(?m)^\s*([0-2])\s*$")
_THINK_BLOCK = re.compile(r"<think>.*?</think>\s*", re.DOTALL)
_THINK_END = re.compile(r"</think>\s*")
_MARK_KEYS = ("consistency", "realism", "aesthetic_quality")


def official_strip_think(text: str) -> str:
    """The verified script's clean-up: whole think blocks removed, then any stray closing tag."""
    return _THINK_END.sub("", _THINK_BLOCK.sub("", text)).strip()


def strip_think(text: str) -> str:
    """umni's clean-up: whole think blocks removed, and everything up to a stray closing tag (the
    reasoning of a reply whose opening tag was in the chat template)."""
    text = _THINK_BLOCK.sub("", text)
    if "</think>" in text:
        text = text.rsplit("</think>", 1)[1]
    return text.strip()


def official_verified_reading(text: str) -> int | None:
    """The score the official verified script reads from `text`, or None where it gives up."""
    text = official_strip_think(text)
    match = _OFFICIAL_VERIFIED.search(text)
    if match:
        return int(match.group(2))
    bare = _BARE_BINARY.findall(text)
    return int(bare[0]) if len(bare) == 1 else None


def official_legacy_reading(text: str) -> dict[str, float] | None:
    """The three marks the official legacy script reads from `text` (any digit 0-9, as it accepts),
    or None where it gives up (no label and fewer than three bare mark lines, or a label missing)."""
    found = {label.lower().replace(" ", "_"): float(value) for label, value in _OFFICIAL_LEGACY.findall(text)}
    if not found:
        bare = _BARE_MARK.findall(text)
        return dict(zip(_MARK_KEYS, map(float, bare[:3]))) if len(bare) >= 3 else None
    return found if set(found) == set(_MARK_KEYS) else None


def parse_legacy_answer(text: str) -> LegacyScores:
    """The three marks of a legacy judge reply, read by the official rules (module comment above);
    a mark that is not a whole number 0-2 is an `InvalidAnswer`, no readable marks a `ParseFailure`."""
    found: dict[str, str] = {}
    for label, value in _WHOLE_LEGACY.findall(text):
        found[label.lower().replace(" ", "_")] = value
    if found:
        absent = [name for key, name in zip(_MARK_KEYS, LEGACY_LABELS) if key not in found]
        if absent:
            raise ParseFailure(f"judge answer gives no mark for {', '.join(absent)}", raw=text)
        values = [found[key] for key in _MARK_KEYS]
    else:
        bare = _BARE_MARK.findall(text)
        if len(bare) < 3:
            raise ParseFailure("judge answer has no Consistency/Realism/Aesthetic Quality marks", raw=text)
        values = bare[:3]
    return LegacyScores(*(_mark(value, 2, name, text) for name, value in zip(LEGACY_LABELS, values)))


def parse_verified_answer(text: str) -> int:
    """The 0/1 score of a verified judge reply, read by the official rules (module comment above)
    after umni's think clean-up; a first ``Score`` that is not 0 or 1 is an `InvalidAnswer`."""
    cleaned = strip_think(text)
    match = _WHOLE_VERIFIED.search(cleaned)
    if match:
        return _mark(match.group(2), 1, VERIFIED_LABEL, text)
    bare = _BARE_BINARY.findall(cleaned)
    if len(bare) != 1:
        raise ParseFailure("judge answer has no 'Score: 0|1' line (nor exactly one bare 0 or 1)", raw=text)
    return int(bare[0])


def _mark(value: str, highest: int, label: str, raw: str) -> int:
    if len(value) > 1 and value[1] != "." and int(value[0]) == 0:  # "01", "00" (any script's digits): not a mark
        raise InvalidAnswer(f"{label} must be a whole number 0-{highest}, got {value}", raw=raw)
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
