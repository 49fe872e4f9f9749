"""Draw the images of the bundled AEGIS-format case set (`annotation.json` beside this file).

Run once (`python cases/aegis/make_images.py`); the PNGs are committed. Every image is drawn here
with PIL from simple shapes, so the set carries no third-party content. Layout mirrors the official
one: `images/<category>/<id>_<k>_input.png` and `..._ref.png`, 128x128.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PIL import Image, ImageDraw

SIZE = 128
HERE = Path(__file__).parent
IMAGES = HERE / "images"


def canvas(color: str = "white") -> tuple[Image.Image, ImageDraw.ImageDraw]:
    image = Image.new("RGB", (SIZE, SIZE), color)
    return image, ImageDraw.Draw(image)


def right_triangle() -> Image.Image:
    """Legs labelled 3 and 4; the hypotenuse is unlabelled (answer: 5)."""
    image, draw = canvas()
    a, b, c = (24, 104), (104, 104), (24, 44)
    draw.polygon([a, b, c], outline="black", width=2)
    draw.rectangle([24, 94, 34, 104], outline="black")
    draw.text((60, 108), "4", fill="black")
    draw.text((12, 70), "3", fill="black")
    return image


def red_traffic_light() -> Image.Image:
    image, draw = canvas("#cfe3f5")
    draw.rectangle([60, 90, 68, 128], fill="#444444")
    draw.rounded_rectangle([44, 8, 84, 94], radius=8, fill="#222222")
    for y, color in ((22, "#ff2020"), (51, "#4a3b00"), (80, "#003b10")):
        draw.ellipse([52, y - 11, 76, y + 11], fill=color)
    return image


def earth_from_space() -> Image.Image:
    image, draw = canvas("black")
    draw.ellipse([24, 24, 104, 104], fill="#1f5fbf")
    draw.polygon([(44, 44), (62, 38), (70, 56), (54, 70), (42, 60)], fill="#2e8b3a")
    draw.polygon([(72, 70), (90, 64), (94, 84), (78, 92)], fill="#2e8b3a")
    draw.ellipse([50, 26, 78, 34], fill="white")
    return image


def red_disc_flag() -> Image.Image:
    image, draw = canvas("#dddddd")
    draw.rectangle([14, 34, 114, 100], fill="white", outline="#999999")
    draw.ellipse([48, 51, 80, 83], fill="#bc002d")
    return image


def glass(with_ice: bool) -> Image.Image:
    """A glass of water; with a floating ice cube, or after it melted (water a little higher)."""
    image, draw = canvas("#fff4d6")
    water_top = 62 if with_ice else 56
    draw.rectangle([40, water_top, 88, 112], fill="#8fc8f0")
    if with_ice:
        draw.rectangle([52, 52, 72, 72], fill="#eefaff", outline="#7fb0d0", width=2)
    draw.line([(40, 24), (40, 112), (88, 112), (88, 24)], fill="#555555", width=3)
    draw.ellipse([98, 6, 122, 30], fill="#ffb000")
    return image


def square(color: str) -> Image.Image:
    image, draw = canvas()
    draw.rectangle([34, 34, 94, 94], fill=color, outline="black", width=2)
    return image


def chrysalis() -> Image.Image:
    image, draw = canvas("#e8f6e0")
    draw.line([(20, 20), (108, 20)], fill="#6b4a2b", width=6)
    draw.line([(64, 20), (64, 34)], fill="#6b4a2b", width=2)
    draw.ellipse([50, 32, 78, 96], fill="#5a9a3a", outline="#2f5f1f", width=2)
    return image


def butterfly() -> Image.Image:
    image, draw = canvas("#e8f6e0")
    draw.ellipse([18, 28, 62, 70], fill="#f08a24")
    draw.ellipse([66, 28, 110, 70], fill="#f08a24")
    draw.ellipse([28, 66, 60, 100], fill="#e06a10")
    draw.ellipse([68, 66, 100, 100], fill="#e06a10")
    draw.rectangle([61, 30, 67, 102], fill="black")
    return image


def die_face(pips: int) -> Image.Image:
    image, draw = canvas("#2d6a4f")
    draw.rounded_rectangle([24, 24, 104, 104], radius=12, fill="white", outline="black", width=2)
    spots = {
        3: [(44, 44), (64, 64), (84, 84)],
        4: [(44, 44), (84, 44), (44, 84), (84, 84)],
    }[pips]
    for x, y in spots:
        draw.ellipse([x - 7, y - 7, x + 7, y + 7], fill="black")
    return image


#: relative path (as written in annotation.json) -> drawing function
DRAWINGS: dict[str, Callable[[], Image.Image]] = {
    "mathematics/0_1_input.png": right_triangle,
    "traffic/1_1_input.png": red_traffic_light,
    "astronomy_geography/2_1_ref.png": earth_from_space,
    "culture/3_1_ref.png": red_disc_flag,
    "physics/4_1_input.png": lambda: glass(with_ice=True),
    "physics/4_1_ref.png": lambda: glass(with_ice=False),
    "art/5_1_input.png": lambda: square("#d62828"),
    "art/5_1_ref.png": lambda: square("#2a9d3a"),
    "biology/6_1_ref.png": chrysalis,
    "biology/6_2_ref.png": butterfly,
    "activity/7_1_input.png": lambda: die_face(3),
    "activity/7_1_ref.png": lambda: die_face(4),
}


def main() -> None:
    for relative, draw in DRAWINGS.items():
        target = IMAGES / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        draw().save(target, optimize=True)
        print(target.relative_to(HERE))


if __name__ == "__main__":
    main()
