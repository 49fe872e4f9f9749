"""Draw the context images of umni's small GENIUS sample (128x128 PNGs, simple shapes).

Run once from anywhere: ``python cases/genius/make_images.py``. The PNGs are committed, so this is
only needed after changing a drawing. Images are palette PNGs to keep the repository small.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PIL import Image, ImageDraw

SIZE = 128
DATASET = Path(__file__).resolve().parent / "dataset"

Draw = ImageDraw.ImageDraw


def canvas(background: str = "white") -> tuple[Image.Image, Draw]:
    image = Image.new("RGB", (SIZE, SIZE), background)
    return image, ImageDraw.Draw(image)


# --- implicit_pattern: posters and photos whose liked ones share a hidden preference ----------------


def ip_warm_sun(d: Draw) -> None:
    d.rectangle([0, 64, 127, 127], fill="#f4a261")
    d.ellipse([36, 24, 92, 80], fill="#e63946")


def ip_cool_waves(d: Draw) -> None:
    for y in range(16, 128, 24):
        d.arc([-20, y - 12, 70, y + 12], 0, 180, fill="#1d3557", width=5)
        d.arc([60, y - 12, 150, y + 12], 0, 180, fill="#457b9d", width=5)


def ip_warm_stripes(d: Draw) -> None:
    for i, colour in enumerate(["#e76f51", "#f4a261", "#e9c46a", "#e63946"]):
        d.rectangle([0, i * 32, 127, i * 32 + 31], fill=colour)


def ip_round_red(d: Draw) -> None:
    d.ellipse([24, 24, 104, 104], fill="#d62828")


def ip_round_blue(d: Draw) -> None:
    d.ellipse([24, 24, 104, 104], fill="#277da1")


def ip_square_blue(d: Draw) -> None:
    d.rectangle([28, 28, 100, 100], fill="#277da1")


# --- symbolic_constraint: a legend of symbols and the things they act on ----------------------------


def sc_legend(d: Draw) -> None:
    d.polygon([(20, 50), (40, 14), (60, 50)], fill="black")
    d.ellipse([80, 18, 108, 46], fill="#d62828")
    d.rectangle([20, 78, 56, 114], fill="black")
    d.line([84, 96, 108, 96], fill="black", width=5)


def sc_basket(d: Draw) -> None:
    d.polygon([(14, 64), (114, 64), (100, 116), (28, 116)], fill="#8d5524")
    d.ellipse([34, 40, 60, 66], fill="#d62828")
    d.ellipse([66, 40, 92, 66], fill="#d62828")


def sc_card_check(d: Draw) -> None:
    d.rounded_rectangle([24, 16, 104, 112], radius=10, fill="#eeeeee", outline="black", width=3)
    d.line([(44, 66), (60, 84), (88, 44)], fill="black", width=6)


def sc_dot_green(d: Draw) -> None:
    d.ellipse([40, 40, 88, 88], fill="#2a9d8f")


# --- visual_constraint: layouts, outlines and the objects that must fit them ------------------------


def vc_plan(d: Draw) -> None:
    d.rectangle([8, 8, 119, 119], outline="black", width=3)
    d.line([8, 64, 119, 64], fill="#bbbbbb", width=8)
    d.line([64, 8, 64, 119], fill="#bbbbbb", width=8)
    d.line([86, 22, 106, 42], fill="#d62828", width=4)
    d.line([106, 22, 86, 42], fill="#d62828", width=4)


def vc_fountain(d: Draw) -> None:
    d.ellipse([20, 60, 108, 104], fill="#9e9e9e")
    d.ellipse([30, 66, 98, 98], fill="#48cae4")
    d.rectangle([58, 30, 70, 80], fill="#9e9e9e")


def vc_outline(d: Draw) -> None:
    d.ellipse([16, 16, 112, 112], outline="black", width=4)


def vc_cat(d: Draw) -> None:
    d.ellipse([34, 52, 94, 112], fill="#f77f00")
    d.ellipse([42, 22, 86, 62], fill="#f77f00")
    d.polygon([(44, 32), (50, 8), (60, 26)], fill="#f77f00")
    d.polygon([(84, 32), (78, 8), (68, 26)], fill="#f77f00")
    d.ellipse([52, 36, 58, 42], fill="black")
    d.ellipse([70, 36, 76, 42], fill="black")


# --- prior_conflicting: demonstrations of a rule that contradicts everyday physics -----------------


def pc_scale_demo(d: Draw) -> None:
    d.line([64, 30, 64, 116], fill="black", width=4)
    d.line([20, 24, 108, 44], fill="black", width=4)  # tipped: the dark box's side is up (it weighs less)
    d.rectangle([8, 4, 32, 24], fill="#222222")
    d.rectangle([96, 24, 120, 44], fill="white", outline="black", width=2)
    d.rectangle([40, 112, 88, 120], fill="black")


def pc_puddle(d: Draw) -> None:
    d.rectangle([0, 80, 127, 127], fill="#6c584c")
    d.ellipse([24, 88, 104, 112], fill="#5e60ce")


# --- multi_semantic: everyday scenes for figurative phrases -----------------------------------------


def ms_desk(d: Draw) -> None:
    d.rectangle([16, 60, 112, 70], fill="#8d5524")
    d.rectangle([22, 70, 30, 116], fill="#8d5524")
    d.rectangle([98, 70, 106, 116], fill="#8d5524")
    d.rectangle([44, 30, 84, 58], fill="#333333")


def ms_jersey(d: Draw) -> None:
    d.polygon([(34, 20), (94, 20), (118, 44), (100, 56), (96, 112), (32, 112), (28, 56), (10, 44)], fill="#0077b6")
    d.text((56, 56), "7", fill="white")


IMAGES: dict[str, list[Callable[[Draw], None]]] = {
    "implicit_pattern": [ip_warm_sun, ip_cool_waves, ip_warm_stripes, ip_round_red, ip_round_blue, ip_square_blue],
    "symbolic_constraint": [sc_legend, sc_basket, sc_card_check, sc_dot_green],
    "visual_constraint": [vc_plan, vc_fountain, vc_outline, vc_cat],
    "prior_conflicting": [pc_scale_demo, pc_puddle],
    "multi_semantic": [ms_desk, ms_jersey],
}


def main() -> None:
    for dimension, drawings in IMAGES.items():
        folder = DATASET / dimension / "images"
        folder.mkdir(parents=True, exist_ok=True)
        for drawing in drawings:
            image, draw = canvas()
            drawing(draw)
            image.quantize(colors=16).save(folder / f"{drawing.__name__}.png", optimize=True)
            print(folder / f"{drawing.__name__}.png")


if __name__ == "__main__":
    main()
