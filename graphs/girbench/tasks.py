"""GIR-Bench's seven tasks and eight metrics: names, the official folder and file names that also
name them, the paper's titles, and the roles each metric needs."""

from __future__ import annotations

from umni.plugin import DETECT, EDIT, EMBED, GENERATE, OCR, UNDERSTAND

#: Tasks in the paper's table order.
TASKS = ("uni", "numerical", "spatial", "text", "puzzle", "sudoku", "perception")
#: Official folder and file names accepted in ``--option tasks=`` besides the short names.
TASK_ALIASES = {
    "numericalreasoning": "numerical",
    "spatiallayout": "spatial",
    "textrendering": "text",
    "visualpuzzle": "puzzle",
    "visuallogic": "sudoku",
    "reasoningperception": "perception",
}

#: Every reported metric: (key, task, title). Uni has two sides, each its own metric.
METRICS = (
    ("uni_understanding", "uni", "Uni · image understanding"),
    ("uni_generation", "uni", "Uni · image generation"),
    ("numerical", "numerical", "Numerical Reasoning"),
    ("spatial", "spatial", "Spatial Layout"),
    ("text", "text", "Text Rendering"),
    ("puzzle", "puzzle", "Visual Puzzle"),
    ("sudoku", "sudoku", "Visual Logic"),
    ("perception", "perception", "Reasoning Perception"),
)
METRIC_TITLES = {key: title for key, _, title in METRICS}
METRIC_TASK = {key: task for key, task, _ in METRICS}
#: The roles each metric needs; a metric whose role is listed in skip_roles is not run.
METRIC_ROLES: dict[str, tuple[str, ...]] = {
    "uni_understanding": (UNDERSTAND,),
    "uni_generation": (GENERATE, EMBED),
    "numerical": (GENERATE, DETECT),
    "spatial": (GENERATE, DETECT),
    "text": (GENERATE, OCR),
    "puzzle": (EDIT, EMBED),
    "sudoku": (EDIT, OCR),
    "perception": (EDIT,),
}
T2I_METRICS = ("numerical", "spatial", "text")
EDIT_METRICS = ("puzzle", "sudoku", "perception")
ALL_ROLES = (GENERATE, EDIT, UNDERSTAND, OCR, DETECT, EMBED)

#: The feature extractor of the official Uni similarity (``eval_Similarity.py`` loads DINOv3 ViT-7B/16).
OFFICIAL_UNI_MODEL = "facebook/dinov3-vit7b16-pretrain-lvd1689m"
#: Metrics whose features come from the official extractors unless ``features=embed``.
FEATURE_METRICS = ("uni_generation", "puzzle")
