"""The RapidOCR backend reads text we draw, with the real PP-OCR models bundled in the wheel."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from PIL import Image, ImageDraw, ImageFont

from umni.backends.roles import OCR, OcrLine
from umni.util.errors import ConfigError
from umni.util.spec import Spec
from umni_adapters.rapidocr import RapidOcrBackend

pytest.importorskip("rapidocr_onnxruntime")

CELL, MARGIN = 40, 20


def font(size: int, bold: bool = True) -> Any:
    """A clear TrueType font if the machine has DejaVu (most Linux images do), else Pillow's own."""
    name = "DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf"
    for path in (name, f"/usr/share/fonts/truetype/dejavu/{name}"):
        try:
            return ImageFont.truetype(path, size)
        except OSError:
            continue
    return ImageFont.load_default(size=size)


def read(image: Image.Image, spec: str = "rapidocr/ppocr") -> list[OcrLine]:
    backend = RapidOcrBackend(Spec.parse(spec))

    async def main() -> list[OcrLine]:
        await backend.start()
        try:
            return await backend.read_text(image)
        finally:
            await backend.aclose()

    return anyio.run(main)


def hello_image() -> tuple[Image.Image, tuple[int, int, int, int]]:
    image = Image.new("RGB", (512, 256), "white")
    draw = ImageDraw.Draw(image)
    typeface = font(60)
    origin = (60, 98)
    draw.text(origin, "HELLO 2026", fill="black", font=typeface)
    return image, draw.textbbox(origin, "HELLO 2026", font=typeface)


def test_reads_a_clear_line_and_boxes_it_where_it_was_drawn() -> None:
    image, drawn = hello_image()
    lines = read(image)

    assert "HELLO2026" in "".join(line.text for line in lines).replace(" ", "")
    line = next(line for line in lines if "2026" in line.text)
    x0, y0, x1, y1 = line.box
    # The detector pads its boxes a little; every edge stays within 12 px of the drawn ink.
    for got, want in zip((x0, y0, x1, y1), drawn, strict=True):
        assert abs(got - want) <= 12, (line.box, drawn)
    assert 0.8 <= line.confidence <= 1.0


def test_reads_digits_placed_in_a_grid_with_their_positions() -> None:
    placed = {(0, 0): "5", (1, 4): "3", (2, 8): "9", (3, 6): "2", (4, 4): "7", (6, 1): "1", (7, 2): "4", (8, 7): "8"}
    size = 2 * MARGIN + 9 * CELL
    image = Image.new("RGB", (size, size), "white")
    draw = ImageDraw.Draw(image)
    for k in range(10):  # a light sudoku grid, as a generated puzzle image would have
        at = MARGIN + k * CELL
        draw.line([(at, MARGIN), (at, size - MARGIN)], fill=(190, 190, 190), width=1)
        draw.line([(MARGIN, at), (size - MARGIN, at)], fill=(190, 190, 190), width=1)
    typeface = font(28, bold=False)
    for (row, col), digit in placed.items():
        centre = (MARGIN + col * CELL + CELL // 2, MARGIN + row * CELL + CELL // 2)
        draw.text(centre, digit, fill="black", font=typeface, anchor="mm")

    found: dict[tuple[int, int], str] = {}
    for line in read(image):
        x0, y0, x1, y1 = line.box
        cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
        found[(int((cy - MARGIN) // CELL), int((cx - MARGIN) // CELL))] = line.text.strip()
    assert found == placed


def test_min_confidence_filters_lines() -> None:
    image, _ = hello_image()
    everything = read(image, "rapidocr/ppocr?min_confidence=0")
    scores = sorted(line.confidence for line in everything)
    assert scores, "the bundled model read nothing from a clear image"
    assert read(image, f"rapidocr/ppocr?min_confidence={min(scores)}") == everything
    above_all = min(1.0, max(scores) + 1e-6)
    assert read(image, f"rapidocr/ppocr?min_confidence={above_all}") == []


def test_a_blank_image_reads_as_no_lines() -> None:
    assert read(Image.new("RGB", (200, 120), "white")) == []


def test_identity_and_engine_sharing() -> None:
    default = RapidOcrBackend(Spec.parse("rapidocr/ppocr"))
    explicit = RapidOcrBackend(Spec.parse("rapidocr/ppocr?min_confidence=0.5&concurrency=2"))
    strict = RapidOcrBackend(Spec.parse("rapidocr/ppocr?min_confidence=0.8"))
    assert default.fills() == {OCR}
    assert default.identity()["params"] == {"min_confidence": 0.5}
    assert default.identity_hash() == explicit.identity_hash() != strict.identity_hash()

    async def start_both() -> bool:
        await default.start()
        await strict.start()
        return default._engine is strict._engine

    assert anyio.run(start_both)


@pytest.mark.parametrize(
    ("spec", "complaint"),
    [
        ("rapidocr/tesseract", "unknown OCR model"),
        ("rapidocr/ppocr?min_confidence=high", "min_confidence"),
        ("rapidocr/ppocr?min_confidence=1.5", "min_confidence"),
        ("rapidocr/ppocr?lang=fr", "unknown parameter"),
    ],
)
def test_bad_specs_fail_at_construction(spec: str, complaint: str) -> None:
    with pytest.raises(ConfigError, match=complaint):
        RapidOcrBackend(Spec.parse(spec))
