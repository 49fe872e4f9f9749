"""Reading model replies: which option a free-text answer names, and boxes from a grounding reply.

Kept free of torch so it can be tested on many reply strings cheaply. A reply that names no option, or
several, yields None (the engine records an invalid answer); it is never guessed into a letter.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence

from umni.errors import ParseFailure
from umni.roles import Detection, option_letter

#: Wrappers models put around a bare answer: markdown emphasis, quotes, brackets.
_DECORATION = re.compile(r"[*_`\"'“”‘’]")
#: "Answer: B", "the answer is (B)", "Correct option: B." — a cue word, then the letter.
#: The cue words ignore case; the letter must be a capital, so "the answer is a cube" names nothing.
_CUED = re.compile(
    r"\b(?i:answer|option|choice)\s*(?i:is|would be)?\s*[:：-]?\s*[\(\[]?([A-Z])[\)\]]?(?=$|[\s.,;:!)\]])"
)
#: The whole reply is one letter (any case), maybe bracketed or punctuated: "B", "(B)", "b.", "[B]:".
_BARE = re.compile(r"^[\(\[]?([A-Za-z])[\)\]]?[.:;,!]?$")
#: A letter that opens the reply and is set off as a label: "B. a cube", "(B) a cube", "B) cube", "B: cube".
_LABELLED = re.compile(r"^[\(\[]?([A-Z])(?:[\)\]][.:]?|[.:])(?:\s+|$)(.*)$", re.DOTALL)


def _normalise(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def _letter_index(letter: str, n_options: int) -> int | None:
    index = ord(letter.upper()) - ord("A")
    return index if 0 <= index < n_options else None


def parse_choice(reply: str, options: Sequence[str]) -> int | None:
    """The option a reply names, by letter or by the option's own text; None if none or several.

    Tolerates "B", "(B)", "B.", "**B**", "Answer: B", "The answer is (B).", "B. the red one", and the
    option text alone. A lone capital "A" opening a sentence ("A cube.") is not taken as a letter,
    because it is more often the article.
    """
    text = _DECORATION.sub("", reply).strip()
    if not text or not options:
        return None
    n = len(options)
    first_line = text.splitlines()[0].strip()

    bare = _BARE.match(first_line)
    if bare:
        return _letter_index(bare.group(1), n)

    labelled = _LABELLED.match(text)
    if labelled:
        index = _letter_index(labelled.group(1), n)
        rest = _normalise(labelled.group(2))
        # "B. red cube" must not contradict itself by quoting another option's text.
        if index is not None and (not rest or _text_match(rest, options) in (None, index)):
            return index
        return None

    cued = {m.group(1).upper() for m in _CUED.finditer(text)}
    if len(cued) == 1:
        return _letter_index(cued.pop(), n)
    if len(cued) > 1:
        return None

    return _text_match(_normalise(text), options)


def _text_match(normalised_reply: str, options: Sequence[str]) -> int | None:
    """An option whose text is the reply, or the one option whose text the reply contains."""
    texts = [_normalise(o) for o in options]
    exact = [i for i, t in enumerate(texts) if t and t == normalised_reply]
    if len(exact) == 1:
        return exact[0]
    padded = f" {normalised_reply} "
    found = [i for i, t in enumerate(texts) if t and f" {t} " in padded]
    # "dark red" contains "red": keep only options not contained in another found option.
    found = [i for i in found if not any(j != i and f" {texts[i]} " in f" {texts[j]} " for j in found)]
    return found[0] if len(found) == 1 else None


def choice_prompt(options: Sequence[str]) -> str:
    """The text appended to a question so the model answers with a letter."""
    lines = [f"{option_letter(i)}. {text}" for i, text in enumerate(options)]
    letters = ", ".join(option_letter(i) for i in range(len(options)))
    return "\n\nOptions:\n" + "\n".join(lines) + f"\nAnswer with the letter of the correct option only ({letters})."


# --------------------------------------------------------------------------------------------------
# grounding

#: Coordinates in grounding replies are on a 0..1000 grid whatever the image size.
GRID = 1000.0
_BOX_KEYS = ("box_2d", "bbox_2d", "bbox", "box")


def grounding_prompt(labels: Sequence[str]) -> str:
    """Ask a VLM for boxes as JSON on the 0..1000 grid (the convention Qwen-VL-style models learn)."""
    names = ", ".join(f'"{label}"' for label in labels)
    return (
        f"Find every instance of these objects in the image: {names}. "
        'Reply with JSON only: a list whose items look like {"label": "<one of the names>", '
        '"box_2d": [x_min, y_min, x_max, y_max]}, where coordinates are scaled so that the image runs '
        "from 0 to 1000 on both axes. Reply [] if none of them is present."
    )


def parse_grounding(reply: str, labels: Sequence[str], width: int, height: int) -> list[Detection]:
    """Boxes in pixels from a JSON grounding reply; ParseFailure when the reply is not such JSON.

    Items naming a label that was not asked for are dropped (the model saw something else); items
    without four finite numbers make the whole reply a failure, since silently dropping them would
    turn a malformed answer into "fewer objects".
    """
    items = _json_items(reply)
    wanted = {label.strip().lower(): label for label in labels}
    detections: list[Detection] = []
    for item in items:
        if not isinstance(item, dict):
            raise ParseFailure("grounding reply: each item must be an object with a label and a box", raw=reply)
        label = item.get("label", item.get("name"))
        box = next((item[k] for k in _BOX_KEYS if k in item), None)
        if not isinstance(label, str) or box is None:
            raise ParseFailure("grounding reply: an item lacks 'label' or 'box_2d'", raw=reply)
        coords = _four_numbers(box)
        if coords is None:
            raise ParseFailure(f"grounding reply: box {box!r} is not four numbers", raw=reply)
        if label.strip().lower() not in wanted:
            continue
        x0, y0, x1, y1 = (min(max(c, 0.0), GRID) for c in coords)
        x0, x1 = sorted((x0, x1))
        y0, y1 = sorted((y0, y1))
        sx, sy = width / GRID, height / GRID
        score = item.get("score", 1.0)
        detections.append(Detection(
            label=wanted[label.strip().lower()],
            box=(x0 * sx, y0 * sy, x1 * sx, y1 * sy),
            score=float(score) if isinstance(score, (int, float)) else 1.0,
        ))
    return detections


def _four_numbers(box: object) -> tuple[float, float, float, float] | None:
    if not isinstance(box, (list, tuple)) or len(box) != 4:
        return None
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in box):
        return None
    return tuple(float(v) for v in box)  # type: ignore[return-value]


def _json_items(reply: str) -> list[object]:
    """The list of items in a reply: bare JSON, JSON in a code fence, or JSON amid prose.

    Scans for the first '[' or '{' that starts a JSON value shaped like an answer (a list of objects,
    an empty list, or one object), so a box list nested inside prose is not mistaken for the answer.
    """
    fenced = re.search(r"```(?:json)?\s*(.*?)```", reply, re.DOTALL)
    text = fenced.group(1) if fenced else reply
    decoder = json.JSONDecoder()
    for start, char in enumerate(text):
        if char not in "[{":
            continue
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            continue
        if isinstance(value, dict):
            return [value]
        if isinstance(value, list) and (not value or any(isinstance(v, dict) for v in value)):
            return value
    raise ParseFailure("grounding reply is not a JSON list of {label, box_2d} objects", raw=reply)
