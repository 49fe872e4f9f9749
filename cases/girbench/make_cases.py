"""Write the small GIR-Bench case set bundled with umni (run once; the outputs are committed).

    python cases/girbench/make_cases.py

Everything here is ours: prompts, descriptions, puzzles and pictures (simple PIL drawings). The
layout is the one the official evaluation reads (see graphs/girbench/cases.py), so the same
loader serves this folder and a downloaded dataset. Output is deterministic (fixed seeds), so
re-running it reproduces the committed files byte for byte.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

HERE = Path(__file__).parent
SEED = 20250

# ---------------------------------------------------------------------------------------------------
# Text-to-image task files

NUMERICAL = [
    {
        "id": 1,
        "prompt": "A farmyard picture with chickens and goats only. Counting heads gives 5 and counting legs gives 14. "
        "Show every animal whole and clearly separated.",
        "task": {"objects": ["chicken", "goat"], "number": [3, 2]},
    },
    {
        "id": 2,
        "prompt": "A tidy desk with pencils and erasers on it. There are twice as many pencils as erasers and six "
        "items altogether. Keep every item fully visible.",
        "task": {"objects": ["pencil", "eraser"], "number": [4, 2]},
    },
    {
        "id": 3,
        "prompt": "A fruit bowl seen from above holding apples and bananas. There is one banana fewer than there "
        "are apples, and the bowl holds five pieces of fruit.",
        "task": {"objects": ["apple", "banana"], "number": [3, 2]},
    },
]

SPATIAL = [
    {
        "id": 1,
        "prompt": "A long shelf with a cat, a car, a dog and a bicycle standing in one row: the living things are "
        "on the left half and the things with wheels are on the right half.",
        "task": {
            "objects": [["cat", "dog"], ["car", "bicycle"]],
            "relative_position": [{"subject": ["cat", "dog"], "direction": "left", "object": ["car", "bicycle"]}],
        },
    },
    {
        "id": 2,
        "prompt": "A kitchen wall with a red cup and a blue plate hanging on it; the item that has the colour of a "
        "ripe tomato hangs higher than the other one.",
        "task": {
            "objects": ["cup", "plate"],
            "colors": ["red", "blue"],
            "relative_position": [{"subject": "cup", "direction": "above", "object": "plate"}],
        },
    },
    {
        "id": 3,
        "prompt": "A watermelon, a grape and an orange lying in a line on a table, ordered from the smallest fruit "
        "on the left to the largest on the right.",
        "task": {
            "objects": ["grape", "orange", "watermelon"],
            "relative_position": [
                {"subject": "grape", "direction": "left", "object": "orange"},
                {"subject": "orange", "direction": "left", "object": "watermelon"},
            ],
        },
    },
]

TEXT = [
    {
        "id": 1,
        "prompt": "A classroom poster showing the two-word greeting to the whole planet that beginners traditionally "
        "make their very first program print.",
        "text": "Hello World",
    },
    {
        "id": 2,
        "prompt": "A road sign pointing towards where the sun rises, naming that compass direction in capital letters.",
        "text": "EAST",
    },
    {
        "id": 3,
        "prompt": "A cake whose icing spells the usual two-word wish sung to someone on the anniversary of their birth.",
        "text": "Happy Birthday",
    },
]

# ---------------------------------------------------------------------------------------------------
# GIR-Bench-Uni: entities with implicit prompts and drawn reference images

UNI = {
    "Zoology": [
        (1, "red_fox", "A small wild canine with rusty orange fur, black legs and a bushy white-tipped tail, trotting over fresh snow."),
        (2, "zebra", "An African grazing animal related to the horse whose black and white stripes are as individual as fingerprints."),
    ],
    "Botany": [
        (1, "sunflower", "A tall garden plant whose broad yellow flower head turns to follow the sun across the summer sky."),
        (2, "saguaro_cactus", "A giant ribbed green column with upturned arms, the emblem of the Sonoran desert."),
    ],
    "Geography": [
        (1, "mount_fuji", "The snow-capped, nearly symmetrical volcano that is the highest peak of Japan, seen across a calm lake."),
        (2, "sahara_desert", "The largest hot desert on Earth, an endless sea of orange dunes under a cloudless sky."),
    ],
}


def _canvas(size: int, colour: tuple[int, int, int]) -> tuple[Image.Image, ImageDraw.ImageDraw]:
    image = Image.new("RGB", (size, size), colour)
    return image, ImageDraw.Draw(image)


def draw_entity(name: str, variant: int) -> Image.Image:
    """A small stylised picture of an entity; variants differ in framing so the set is not one image twice."""
    size = 96
    shift = 6 * variant
    if name == "red_fox":
        image, d = _canvas(size, (235, 240, 245))
        d.ellipse((20 + shift, 40, 70 + shift, 70), fill=(205, 90, 30))
        d.polygon([(62 + shift, 44), (86 + shift, 36), (70 + shift, 58)], fill=(205, 90, 30))
        d.ellipse((4 + shift, 48, 30 + shift, 62), fill=(215, 110, 40))
        d.ellipse((2 + shift, 52, 10 + shift, 58), fill=(250, 250, 250))
        for x in (28, 40, 52, 60):
            d.line((x + shift, 68, x + shift, 84), fill=(30, 20, 20), width=3)
    elif name == "zebra":
        image, d = _canvas(size, (200, 190, 120))
        d.rectangle((18 + shift, 38, 74 + shift, 64), fill=(245, 245, 245))
        for x in range(20, 74, 8):
            d.line((x + shift, 38, x + 4 + shift, 64), fill=(15, 15, 15), width=3)
        d.rectangle((70 + shift, 24, 84 + shift, 46), fill=(245, 245, 245))
        for x in (22, 34, 58, 70):
            d.line((x + shift, 64, x + shift, 86), fill=(15, 15, 15), width=3)
    elif name == "sunflower":
        image, d = _canvas(size, (120, 180, 240))
        d.line((48, 50, 48 + shift // 2, 94), fill=(40, 130, 40), width=5)
        d.ellipse((22 - shift // 2, 14, 74 + shift // 2, 66), fill=(250, 205, 20))
        d.ellipse((36, 28, 60, 52), fill=(100, 60, 20))
    elif name == "saguaro_cactus":
        image, d = _canvas(size, (240, 200, 140))
        d.rounded_rectangle((40, 14 + shift, 56, 94), radius=8, fill=(50, 140, 60))
        d.rounded_rectangle((20, 40 + shift, 30, 66 + shift), radius=5, fill=(50, 140, 60))
        d.rectangle((20, 60 + shift, 44, 68 + shift), fill=(50, 140, 60))
        d.rounded_rectangle((66, 30 + shift, 76, 58 + shift), radius=5, fill=(50, 140, 60))
        d.rectangle((52, 52 + shift, 76, 60 + shift), fill=(50, 140, 60))
    elif name == "mount_fuji":
        image, d = _canvas(size, (150, 200, 250))
        d.rectangle((0, 70, size, size), fill=(60, 110, 170))
        d.polygon([(4, 72), (48 + shift // 2, 18), (92, 72)], fill=(90, 90, 120))
        d.polygon([(36 + shift // 2, 32), (48 + shift // 2, 18), (60 + shift // 2, 32)], fill=(250, 250, 250))
    else:  # sahara_desert
        image, d = _canvas(size, (140, 200, 250))
        for i, top in enumerate((44 + shift, 60, 76)):
            tone = (230 - 15 * i, 150 - 10 * i, 60)
            d.chord((-30 + 20 * i, top, 80 + 30 * i, top + 60), 180, 360, fill=tone)
            if top + 30 < size:
                d.rectangle((0, top + 30, size, size), fill=tone)
    return image


# ---------------------------------------------------------------------------------------------------
# GIR-Bench-Edit: reasoning perception, sudoku, puzzle

PERCEPTION = [
    (1, "the thing on the table that you would pour hot coffee into."),
    (2, "what lights up the sky during the day."),
]


def draw_perception(case: int) -> tuple[Image.Image, Image.Image]:
    """A scene and the mask of the object the description points to."""
    size = 128
    image, d = _canvas(size, (225, 215, 200))
    mask = Image.new("L", (size, size), 0)
    m = ImageDraw.Draw(mask)
    if case == 1:
        d.rectangle((0, 84, size, size), fill=(150, 100, 60))
        d.ellipse((14, 50, 50, 86), fill=(200, 30, 40))  # apple
        mug = (70, 44, 104, 86)
        d.rectangle(mug, fill=(40, 70, 180))
        d.arc((96, 52, 118, 76), -90, 90, fill=(40, 70, 180), width=5)
        m.rectangle(mug, fill=255)
    else:
        d.rectangle((0, 0, size, 80), fill=(140, 190, 240))
        d.rectangle((0, 80, size, size), fill=(125, 140, 85))  # not in the scorer's green range
        sun = (84, 10, 116, 42)
        d.ellipse(sun, fill=(250, 210, 40))
        d.rectangle((20, 60, 60, 100), fill=(180, 60, 50))
        d.polygon([(14, 62), (40, 36), (66, 62)], fill=(90, 50, 40))
        m.ellipse(sun, fill=255)
    return image, mask


SUDOKU = [
    # (id, solution, givens mask as a string of 1/0 row by row, whether the JSON carries the grids)
    (1, [[1, 2, 3, 4], [3, 4, 1, 2], [2, 1, 4, 3], [4, 3, 2, 1]], "1001" "0110" "1010" "0101", True),
    (2, [[2, 1, 4, 3], [4, 3, 2, 1], [1, 4, 3, 2], [3, 2, 1, 4]], "0110" "1001" "0101" "1010", False),
]


def draw_sudoku(grid: list[list[int]]) -> Image.Image:
    """A 4x4 sudoku filling the whole image (the scorer places digits by the image's own cells)."""
    size, n = 256, len(grid)
    cell = size // n
    image, d = _canvas(size, (255, 255, 255))
    font = ImageFont.load_default(size=40)
    for i in range(n + 1):
        width = 4 if i % 2 == 0 else 1
        pos = min(i * cell, size - 1)
        d.line((pos, 0, pos, size), fill=(0, 0, 0), width=width)
        d.line((0, pos, size, pos), fill=(0, 0, 0), width=width)
    for r in range(n):
        for c in range(n):
            if grid[r][c]:
                d.text((c * cell + cell / 2, r * cell + cell / 2), str(grid[r][c]), fill=(0, 0, 0), font=font, anchor="mm")
    return image


def draw_puzzle_solution(case: int) -> Image.Image:
    """A picture with structure in every tile, so a wrong arrangement changes its features."""
    size = 96
    rng = random.Random(SEED + case)
    image = Image.new("RGB", (size, size))
    d = ImageDraw.Draw(image)
    top = tuple(rng.randrange(60, 200) for _ in range(3))
    bottom = tuple(rng.randrange(20, 160) for _ in range(3))
    for y in range(size):
        t = y / (size - 1)
        d.line((0, y, size, y), fill=tuple(int(a + (b - a) * t) for a, b in zip(top, bottom)))
    for _ in range(4):
        x, y, r = rng.randrange(10, 86), rng.randrange(10, 86), rng.randrange(8, 20)
        d.ellipse((x - r, y - r, x + r, y + r), fill=tuple(rng.randrange(256) for _ in range(3)))
    return image


def shuffle_tiles(image: Image.Image, tiles: int, rng: random.Random) -> Image.Image:
    """Permute the tiles so that at least half of them leave their place (the benchmark's rule)."""
    size = image.width // tiles
    order = list(range(tiles * tiles))
    while True:
        rng.shuffle(order)
        if sum(1 for i, j in enumerate(order) if i != j) * 2 >= len(order):
            break
    out = Image.new("RGB", image.size)
    for dest, src in enumerate(order):
        sr, sc = divmod(src, tiles)
        dr, dc = divmod(dest, tiles)
        out.paste(image.crop((sc * size, sr * size, (sc + 1) * size, (sr + 1) * size)), (dc * size, dr * size))
    return out


# ---------------------------------------------------------------------------------------------------


def _write_json(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _save(image: Image.Image, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path, format="PNG", optimize=True)


def main(root: Path = HERE) -> None:
    prompt = root / "prompt"
    _write_json(prompt / "NumericalReasoning.json", NUMERICAL)
    _write_json(prompt / "SpatialLayout.json", SPATIAL)
    _write_json(prompt / "TextRendering.json", TEXT)
    for category, entities in UNI.items():
        _write_json(prompt / f"{category}.json", [{"id": i, "prompt": text} for i, _, text in entities])
        for i, name, _ in entities:
            for variant in (1, 2):
                _save(draw_entity(name, variant), root / category / f"{i}_{name}" / f"ref_{variant}.png")
    _write_json(prompt / "ReasoningPerception.json", [{"id": i, "prompt": text} for i, text in PERCEPTION])
    for i, _ in PERCEPTION:
        image, mask = draw_perception(i)
        _save(image, root / "ReasoningPerception" / "image" / f"{i}.png")
        _save(mask, root / "ReasoningPerception" / "mask" / f"{i}.png")
    for i, solution, givens, with_grids in SUDOKU:
        n = len(solution)
        grid = [[solution[r][c] if givens[r * n + c] == "1" else 0 for c in range(n)] for r in range(n)]
        spec: dict[str, object] = {"grid_size": n}
        if with_grids:
            spec |= {"grid": grid, "solution": solution}
        _write_json(root / "VisualLogic" / "sudoku" / f"{i}.json", spec)
        _save(draw_sudoku(grid), root / "VisualLogic" / "question" / f"{i}.png")
        _save(draw_sudoku(solution), root / "VisualLogic" / "answer" / f"{i}.png")
    rng = random.Random(SEED)
    for i in (1, 2, 3):
        solution = draw_puzzle_solution(i)
        _save(solution, root / "VisualPuzzle" / "solution" / f"{i:03d}.png")
        _save(shuffle_tiles(solution, 2 if i < 3 else 3, rng), root / "VisualPuzzle" / "question" / f"{i:03d}.png")


if __name__ == "__main__":
    main()
