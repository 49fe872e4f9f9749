"""Drawing and pixel reading for the sim reference backend.

Drawing turns a scene into a 256x256 picture: each thing is a labelled shape filled with its colour,
its parts are discs on it, spatial relations decide placement, and quoted text is written large enough
for an OCR tool to read. The scene itself rides along in the image's ``info`` (a PNG text chunk once
saved), which is what sim reads back. Pixel reading is the fallback for images sim did not make: it
names the dominant colours, which is all a shape-drawing backend can honestly claim to see.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from functools import lru_cache

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from .sim_scene import MAX_THINGS, SCENE_KEY, Fact, Scene, Thing
from .sim_words import COLOURS

CANVAS = 256
_DEFAULT_BACKGROUND = (240, 238, 232)
_UNCOLOURED = (150, 150, 150)
_INK = (30, 30, 30)
_SIZE_SCALE = {
    "tiny": 0.5, "small": 0.7, "little": 0.7, "medium": 1.0, "large": 1.3, "big": 1.3,
    "huge": 1.5, "giant": 1.5, "enormous": 1.5, "massive": 1.5,
}
_BASE_RADIUS = 30
_SHAPES = ("ellipse", "box", "triangle", "diamond")
#: Where a subject goes relative to its object, in units of (subject radius + object radius).
_OFFSETS = {
    "left of": (-1.25, 0.0), "right of": (1.25, 0.0), "next to": (1.15, 0.0), "above": (0.0, -1.25),
    "below": (0.0, 1.25), "under": (0.0, 1.1), "on": (0.0, -1.0), "in front of": (0.35, 0.45),
    "behind": (-0.35, -0.45), "inside": (0.0, 0.0),
}
#: Relations whose subject is drawn after (on top of) its object.
_DRAWN_OVER = frozenset({"on", "in front of", "inside"})


@lru_cache(maxsize=8)
def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=size)


def _digest(*parts: object) -> int:
    text = "\x1f".join(str(p) for p in parts).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big")


def _radius(thing: Thing) -> float:
    scale = 1.0
    for word in thing.attrs.get("size", []):
        scale = _SIZE_SCALE.get(word, scale)
    return _BASE_RADIUS * scale


def _fill(words: list[str]) -> tuple[int, int, int] | None:
    for word in words:
        if word in COLOURS:
            return COLOURS[word]
    return None


def layout(scene: Scene, *, seed: int) -> dict[str, tuple[float, float, float]]:
    """Centre and radius of each thing: a row by default, moved to honour the stated relations."""
    things = scene.things[:MAX_THINGS]
    count = len(things)
    places: dict[str, tuple[float, float, float]] = {}
    top_row = min(count, 3)
    for index, thing in enumerate(things):
        row, col = divmod(index, 3)
        in_row = top_row if row == 0 else count - 3
        x = CANVAS * (col + 1) / (in_row + 1)
        y = 150.0 if count <= 3 else (105.0 if row == 0 else 195.0)
        places[thing.name] = (x, y, _radius(thing))
    for subject, relation, obj in scene.relations * 2:  # twice, so a moved object carries its subjects along
        if subject not in places or obj not in places or relation not in _OFFSETS:
            continue
        ox, oy, orad = places[obj]
        _, _, srad = places[subject]
        dx, dy = _OFFSETS[relation]
        if relation == "inside":
            srad = min(srad, orad * 0.55)
        span = srad + orad
        places[subject] = (ox + dx * span, oy + dy * span, srad)
    jitter_x = _digest("jx", seed) % 9 - 4
    jitter_y = _digest("jy", seed) % 9 - 4
    placed = {}
    for name, (x, y, r) in places.items():
        margin = r + 4
        x = min(max(x + jitter_x, margin), CANVAS - margin)
        y = min(max(y + jitter_y, margin + 14), CANVAS - margin - 14)
        placed[name] = (x, y, r)
    return placed


def _draw_order(scene: Scene) -> list[Thing]:
    things = scene.things[:MAX_THINGS]
    later = {s for s, r, _ in scene.relations if r in _DRAWN_OVER}
    return [t for t in things if t.name not in later] + [t for t in things if t.name in later]


def _shape(draw: ImageDraw.ImageDraw, kind: str, x: float, y: float, r: float, fill, outline) -> None:
    box = (x - r, y - r, x + r, y + r)
    if kind == "ellipse":
        draw.ellipse(box, fill=fill, outline=outline, width=3)
    elif kind == "box":
        draw.rounded_rectangle(box, radius=r / 4, fill=fill, outline=outline, width=3)
    elif kind == "triangle":
        draw.polygon([(x, y - r), (x + r, y + r), (x - r, y + r)], fill=fill, outline=outline, width=3)
    else:
        draw.polygon([(x, y - r), (x + r, y), (x, y + r), (x - r, y)], fill=fill, outline=outline, width=3)


def _luminance(rgb: tuple[int, int, int]) -> float:
    return 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]


#: How many drawings `render` keeps (256x256 RGB, about 200 KB each; the bundled cases of every protocol draw fewer distinct pictures).
DRAWINGS_KEPT = 128


def drawing_key(scene: Scene, *, seed: int) -> str:
    """Everything `_draw` reads, and nothing else: two scenes with one key give the same pixels.

    Facts and the step are left out (they ride along in the image's scene record but are not drawn),
    so scenes that differ only in what was said draw once. Dicts keep their order here, because
    drawing follows it; two orders of one content are two keys, a miss and never a wrong picture."""
    things = [[t.name, t.words, t.attrs, t.parts] for t in scene.things[:MAX_THINGS]]
    drawn = [scene.background, things, scene.relations, scene.texts[:3], seed]
    return json.dumps(drawn, separators=(",", ":"), ensure_ascii=False)


def render(scene: Scene, *, seed: int) -> Image.Image:
    """Draw ``scene``; the returned image carries the scene JSON in ``info[SCENE_KEY]``.

    The pixels come from a small cache keyed by `drawing_key`, since drawing text is the costliest
    part of the reference backend and many calls draw the same picture; every caller gets its own copy."""
    image = _drawn(drawing_key(scene, seed=seed), scene, seed).copy()
    image.info = {SCENE_KEY: scene.to_json()}
    return image


_DRAWINGS: OrderedDict[str, Image.Image] = OrderedDict()
_DRAWINGS_LOCK = threading.Lock()


def _drawn(key: str, scene: Scene, seed: int) -> Image.Image:
    with _DRAWINGS_LOCK:
        found = _DRAWINGS.get(key)
        if found is not None:
            _DRAWINGS.move_to_end(key)
            return found
    image = _draw(scene, seed=seed)
    with _DRAWINGS_LOCK:
        _DRAWINGS[key] = image
        if len(_DRAWINGS) > DRAWINGS_KEPT:
            _DRAWINGS.popitem(last=False)
    return image


def _draw(scene: Scene, *, seed: int) -> Image.Image:
    """The pixels of ``scene`` (no scene record: `render` attaches it)."""
    background = COLOURS.get(scene.background or "", _DEFAULT_BACKGROUND)
    image = Image.new("RGB", (CANVAS, CANVAS), background)
    draw = ImageDraw.Draw(image)
    ink = _INK if _luminance(background) > 110 else (245, 245, 245)
    places = layout(scene, seed=seed)
    for thing in _draw_order(scene):
        x, y, r = places[thing.name]
        colours = thing.colours
        fill = _fill(colours) or _UNCOLOURED
        outline = COLOURS[colours[1]] if len(colours) > 1 else _INK
        _shape(draw, _SHAPES[_digest("shape", thing.name) % len(_SHAPES)], x, y, r, fill, outline)
        for index, (_part, attrs) in enumerate(list(thing.parts.items())[:3]):
            px = x + (index - 1) * r * 0.6
            py = y - r * 0.45
            pr = r * 0.32
            part_fill = _fill(attrs.get("colour", [])) or tuple(min(255, c + 50) for c in fill)
            draw.ellipse((px - pr, py - pr, px + pr, py + pr), fill=part_fill, outline=_INK, width=2)
    for thing in scene.things[:MAX_THINGS]:  # labels last, so no shape hides one
        x, y, r = places[thing.name]
        label = " ".join(thing.words + [thing.name])
        if thing.parts:
            label += " (" + ", ".join(list(thing.parts)[:3]) + ")"
        draw.text((x, y + r + 3), label, fill=ink, font=_font(12), anchor="mt")
    for index, text in enumerate(scene.texts[:3]):
        font = _font(22)
        top = 6 + index * 32
        left, upper, right, lower = draw.textbbox((CANVAS / 2, top), text, font=font, anchor="mt")
        draw.rectangle((left - 4, upper - 3, right + 4, lower + 3), fill=(255, 255, 255))
        draw.text((CANVAS / 2, top), text, fill=(0, 0, 0), font=font, anchor="mt")
    return image


# --------------------------------------------------------------------------------------------------
# Pixel reading

#: The colours sim names when it reads pixels (a coarse palette, so names are the common ones).
PIXEL_PALETTE: dict[str, tuple[int, int, int]] = {
    "red": (210, 40, 40), "orange": (240, 140, 30), "yellow": (240, 215, 50), "green": (50, 160, 70),
    "blue": (40, 90, 210), "purple": (130, 50, 170), "pink": (245, 150, 190), "brown": (130, 80, 40),
    "black": (20, 20, 20), "white": (245, 245, 245), "gray": (128, 128, 128), "cyan": (40, 200, 220),
    "golden": (218, 165, 32),
}
_PALETTE_NAMES = list(PIXEL_PALETTE)
_PALETTE = np.array([PIXEL_PALETTE[n] for n in _PALETTE_NAMES], dtype=np.float32)


def dominant_colours(image: Image.Image, *, limit: int = 3, min_share: float = 0.06) -> tuple[list[tuple[str, float]], bytes]:
    """Names and shares of the colours covering at least ``min_share`` of the image, largest first.

    Also returns the thumbnail bytes the names were read from, a cheap fingerprint of the image.
    """
    thumb = image.convert("RGB").resize((24, 24), Image.Resampling.BOX)
    raw = thumb.tobytes()
    pixels = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 3).astype(np.float32)
    distances = ((pixels[:, None, :] - _PALETTE[None, :, :]) ** 2).sum(axis=2)
    counts = np.bincount(distances.argmin(axis=1), minlength=len(_PALETTE_NAMES))
    order = np.argsort(-counts, kind="stable")
    total = float(counts.sum())
    shares = [(_PALETTE_NAMES[i], counts[i] / total) for i in order if counts[i] / total >= min_share]
    return shares[:limit], raw


def pixel_scene(image: Image.Image) -> tuple[Scene, bytes]:
    """What sim can say about an image it did not draw: its dominant colours, weighted by their share."""
    shares, raw = dominant_colours(image)
    facts = [Fact(["colour", name], 0, weight=round(share, 4)) for name, share in shares]
    scene = Scene(facts=facts, background=shares[0][0] if shares else None, source="pixels")
    return scene, raw
