"""What GIR-Bench's edit tasks and its Uni question ask the model, in umni's own words (the official
prompts of the text-to-image tasks and of Uni generation come with the cases)."""

from __future__ import annotations

PUZZLE_INSTRUCTION = (
    "This picture was cut into a grid of equal square tiles and the tiles were shuffled. Put every tile "
    "back where it belongs so the picture is whole again. Only move tiles: do not add, remove or redraw anything."
)
SUDOKU_INSTRUCTION = (
    "Solve the {n}x{n} sudoku in this image. Write a digit from 1 to {n} into every empty cell so that each "
    "row, each column and each marked block holds every digit exactly once. Keep the grid and the printed "
    "digits exactly as they are."
)
PERCEPTION_INSTRUCTION = (
    "Find the part of this image that the following description points to: {target} "
    "Paint exactly that region solid, fully opaque pure green (RGB 0, 255, 0) and leave every other pixel unchanged."
)
VQA_QUESTIONS = {
    "Zoology": "Which animal does this photo show?",
    "Botany": "Which plant does this photo show?",
    "Geography": "Which place does this photo show?",
}
VQA_CHOICES = 4
