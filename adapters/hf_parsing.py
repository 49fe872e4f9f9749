"""Reading model replies: which option a free-text answer names, and boxes from a grounding reply.

Kept free of torch so it can be tested on many reply strings cheaply. A reply that names no option, or
several, yields None (the engine records an invalid answer); it is never guessed into a letter.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence

from umni.plugin import (
    Detection,
    ParseFailure,
    option_letter,
    parse_choice,  # the one multiple-choice reading, shared with every backend
)

__all__ = ["ABSOLUTE_PIXEL_FAMILIES", "GRID", "choice_prompt", "grounding_prompt", "parse_choice", "parse_grounding"]

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


#: Model families that answer grounding questions in pixels of the image as their processor resized
#: it (Qwen2.5-VL); the others (Qwen2-VL, Qwen3-VL, most VLMs) use the 0..1000 grid.
ABSOLUTE_PIXEL_FAMILIES = frozenset({"qwen2_5_vl"})


def grounding_prompt(labels: Sequence[str], *, pixels: tuple[int, int] | None = None) -> str:
    """Ask a VLM for boxes as JSON, on the 0..1000 grid, or in pixels of a `pixels` (width, height)
    image for the families trained that way."""
    names = ", ".join(f'"{label}"' for label in labels)
    frame = (
        f"where coordinates are pixels of the {pixels[0]}x{pixels[1]} image"
        if pixels
        else "where coordinates are scaled so that the image runs from 0 to 1000 on both axes"
    )
    return (
        f"Find every instance of these objects in the image: {names}. "
        'Reply with JSON only: a list whose items look like {"label": "<one of the names>", '
        f'"box_2d": [x_min, y_min, x_max, y_max]}}, {frame}. Reply [] if none of them is present.'
    )


def parse_grounding(
    reply: str, labels: Sequence[str], width: int, height: int, *, frame: tuple[float, float] = (GRID, GRID)
) -> list[Detection]:
    """Boxes in pixels from a JSON grounding reply; ParseFailure when the reply is not such JSON.

    ``frame`` is the extent the reply's coordinates run over: the 0..1000 grid by default, or the
    (width, height) of the image as the model saw it for families that answer in pixels.

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
        fx, fy = frame
        x0, x1 = sorted((min(max(coords[0], 0.0), fx), min(max(coords[2], 0.0), fx)))
        y0, y1 = sorted((min(max(coords[1], 0.0), fy), min(max(coords[3], 0.0), fy)))
        sx, sy = width / fx, height / fy
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
