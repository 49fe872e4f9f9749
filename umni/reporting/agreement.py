"""Judge agreement: two runs' judgements item by item, or one run against human ratings.

An item is (case id, metric); each protocol says which per-case numbers are its judgements
(`Protocol.judgements`). Two runs are compared with Pearson and Spearman correlation, exact
agreement, mean absolute error and — when both sides are whole numbers (0/1/2 marks, Y/N) —
Cohen's kappa. Against people (a CSV of case id, metric, rating) the papers report PLCC, SRCC and
MAE; a scatter plot is written beside the numbers. Ratings on another scale than the run's are
refused, or rescaled linearly onto the run's scale when their scale is given; ratings that match
no judgement of the run are listed.
"""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

from scipy import stats
from sklearn.metrics import cohen_kappa_score

from umni.protocols.protocol import get_protocol
from umni.store.completion import require_complete
from umni.store.runfolder import RunFolder
from umni.util.errors import InputError

Items = dict[tuple[str, str], float]


def run_judgements(run: Path) -> tuple[str, Items]:
    folder = RunFolder(run)
    if not folder.summary_json.exists():
        raise InputError("not a finished umni run (no summary.json)", path=run)
    require_complete(run)
    protocol = get_protocol(folder.read_summary().protocol)
    items: Items = {}
    for record in folder.each_record():
        for metric, value in protocol.judgements(record).items():
            if value is not None:
                items[(record["case_id"], metric)] = float(value)
    return protocol.name, items


def read_human(path: Path) -> Items:
    """CSV with a header naming `case_id`, `metric`, `rating` (other columns ignored)."""
    items: Items = {}
    try:
        handle = open(path, newline="", encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror})", path=path) from None
    with handle:
        reader = csv.DictReader(handle)
        missing = {"case_id", "metric", "rating"} - set(reader.fieldnames or [])
        if missing:
            raise InputError(f"the header must name case_id, metric, rating (missing: {', '.join(sorted(missing))})", path=path, line=1)
        for number, row in enumerate(reader, start=2):
            try:
                value = float(row["rating"])
            except (TypeError, ValueError):
                raise InputError(f"rating {row['rating']!r} is not a number", path=path, line=number, field="rating") from None
            if not math.isfinite(value):
                raise InputError("rating must be finite", path=path, line=number, field="rating")
            items[(row["case_id"], row["metric"])] = value
    if not items:
        raise InputError("no ratings in the file", path=path)
    return items


def _by_metric(a: Items, b: Items) -> dict[str, tuple[list[float], list[float]]]:
    paired: dict[str, tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    for key in sorted(set(a) & set(b)):
        xs, ys = paired[key[1]]
        xs.append(a[key])
        ys.append(b[key])
    return dict(paired)


def _correlation(fn: Any, xs: list[float], ys: list[float]) -> float | None:
    if len(xs) < 2 or len(set(xs)) < 2 or len(set(ys)) < 2:
        return None  # undefined for constant series; never reported as 0
    return round(float(fn(xs, ys)[0]), 4)


def compare(a: Items, b: Items) -> dict[str, Any]:
    result: dict[str, Any] = {"only_in_first": len(set(a) - set(b)), "only_in_second": len(set(b) - set(a)), "metrics": {}}
    for metric, (xs, ys) in sorted(_by_metric(a, b).items()):
        entry: dict[str, Any] = {
            "n": len(xs),
            "pearson": _correlation(stats.pearsonr, xs, ys),
            "spearman": _correlation(stats.spearmanr, xs, ys),
            "exact_agreement": round(sum(x == y for x, y in zip(xs, ys)) / len(xs), 4),
            "mae": round(sum(abs(x - y) for x, y in zip(xs, ys)) / len(xs), 4),
        }
        labels = sorted(set(xs) | set(ys))
        if all(float(v).is_integer() for v in xs + ys) and len(labels) > 1:
            kappa = cohen_kappa_score([int(x) for x in xs], [int(y) for y in ys], labels=[int(l) for l in labels])
            entry["cohen_kappa"] = None if math.isnan(kappa) else round(float(kappa), 4)
        result["metrics"][metric] = entry
    return result


#: Rating scales recognised when a scale is not given: the narrowest one holding every value.
SCALES: tuple[tuple[float, float], ...] = ((0, 1), (0, 2), (1, 5), (0, 5), (1, 10), (0, 10), (0, 100))


def infer_scale(values: list[float]) -> tuple[float, float] | None:
    """The narrowest common scale (0–1, 0–2, 1–5, 0–5, 1–10, 0–10, 0–100) holding all values."""
    low, high = min(values), max(values)
    fitting = [s for s in SCALES if s[0] <= low and high <= s[1]]
    return min(fitting, key=lambda s: s[1] - s[0]) if fitting else None


def parse_scale(text: str) -> tuple[float, float]:
    """`LOW:HIGH` (e.g. `1:5`) as two numbers, LOW < HIGH."""
    low, sep, high = text.partition(":")
    try:
        scale = (float(low), float(high))
    except ValueError:
        scale = (0.0, 0.0)
    if not sep or not scale[0] < scale[1]:
        raise InputError(f"a scale is LOW:HIGH with LOW < HIGH, e.g. 1:5 (got '{text}')")
    return scale


def _fmt_scale(scale: tuple[float, float] | None) -> str:
    return "unknown" if scale is None else f"{scale[0]:g}–{scale[1]:g}"


def _align_scales(run_items: Items, human: Items, human_scale: tuple[float, float] | None) -> tuple[Items, dict[str, Any]]:
    """Human ratings on the run's scale, per metric: rescaled linearly when `human_scale` is given,
    refused (InputError) when the two sides are on different scales and no scale was given."""
    aligned: Items = dict(human)
    notes: dict[str, Any] = {}
    for metric in sorted({m for _, m in human} & {m for _, m in run_items}):
        run_values = [v for (_, m), v in run_items.items() if m == metric]
        human_values = [v for (_, m), v in human.items() if m == metric]
        run_scale = infer_scale(run_values)
        if human_scale is None:
            found = infer_scale(human_values)
            if found != run_scale:
                raise InputError(
                    f"metric '{metric}': the human ratings look like a {_fmt_scale(found)} scale "
                    f"(values {min(human_values):g}–{max(human_values):g}) but the run's judgements are on "
                    f"{_fmt_scale(run_scale)}; MAE across scales means nothing. Give the ratings' scale with "
                    "--human-scale LOW:HIGH to rescale them onto the run's scale"
                )
            continue
        low, high = human_scale
        outside = [v for v in human_values if not low <= v <= high]
        if outside:
            raise InputError(f"metric '{metric}': rating {outside[0]:g} lies outside --human-scale {low:g}:{high:g}")
        target = run_scale or (min(run_values), max(run_values))
        for key, value in human.items():
            if key[1] == metric:
                aligned[key] = target[0] + (value - low) / (high - low) * (target[1] - target[0])
        notes[metric] = {"from": [low, high], "to": list(target)}
    return aligned, notes


def compare_human(run_items: Items, human: Items, plot: Path | None = None, *, human_scale: tuple[float, float] | None = None) -> dict[str, Any]:
    """PLCC, SRCC and MAE of the run's judgements against human ratings, per metric.

    Ratings on another scale than the run's are refused unless `human_scale` (LOW, HIGH) is
    given, in which case they are rescaled linearly onto the run's scale first. Ratings with no
    judgement in the run are listed under `unmatched`.
    """
    unmatched = sorted(set(human) - set(run_items))
    human, rescaled = _align_scales(run_items, human, human_scale)
    result: dict[str, Any] = {
        "unmatched_ratings": len(unmatched),
        "unmatched": [{"case_id": c, "metric": m} for c, m in unmatched],
        "metrics": {},
    }
    if rescaled:
        result["rescaled"] = rescaled
    paired = _by_metric(run_items, human)
    for metric, (xs, ys) in sorted(paired.items()):
        result["metrics"][metric] = {
            "n": len(xs),
            "plcc": _correlation(stats.pearsonr, xs, ys),
            "srcc": _correlation(stats.spearmanr, xs, ys),
            "mae": round(sum(abs(x - y) for x, y in zip(xs, ys)) / len(xs), 4),
        }
    if plot is not None and paired:
        _scatter(paired, plot)
        result["plot"] = str(plot)
    return result


def _scatter(paired: dict[str, tuple[list[float], list[float]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(paired), figsize=(4 * len(paired), 3.6), squeeze=False)
    for ax, (metric, (xs, ys)) in zip(axes[0], sorted(paired.items())):
        ax.scatter(xs, ys, s=14, alpha=0.7)
        ax.set_xlabel(f"umni {metric}")
        ax.set_ylabel("human rating")
        ax.set_title(metric)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
